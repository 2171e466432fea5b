package rollout_test

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/internal/proptest"
	"github.com/kplan-dev/kplan/rollout"
)

func TestMain(m *testing.M) { os.Exit(proptest.Run(m, proptest.DefaultChecks)) }

func ptr(v intstr.IntOrString) *intstr.IntOrString { return &v }

// ready is an available replica's state.
var ready = rollout.State{Ready: true, Available: true, Healthy: true}
