package rollout_test

import (
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/internal/proptest"
	"github.com/kplan-dev/kplan/rollout"
)

func TestMain(m *testing.M) { os.Exit(proptest.Run(m, proptest.DefaultChecks)) }

func ptr(v intstr.IntOrString) *intstr.IntOrString { return &v }

// ready is an available replica's state.
var ready = rollout.State{Ready: true, Available: true, Healthy: true}

// strictTime compares times with ==, as reflect.DeepEqual does (instant, location
// and monotonic reading), not with time.Time.Equal, which cmp would use by default:
// an input's timestamps must come back exactly as they went in.
var strictTime = cmp.Comparer(func(a, b time.Time) bool { return a == b })
