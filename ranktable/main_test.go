package ranktable

import (
	"flag"
	"os"
	"testing"

	"github.com/kplan-dev/kplan/internal/proptest"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func TestMain(m *testing.M) { os.Exit(proptest.Run(m, proptest.DefaultChecks)) }
