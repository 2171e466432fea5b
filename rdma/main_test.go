package rdma

import (
	"os"
	"testing"

	"github.com/kplan-dev/kplan/internal/proptest"
)

func TestMain(m *testing.M) { os.Exit(proptest.Run(m, proptest.DefaultChecks)) }
