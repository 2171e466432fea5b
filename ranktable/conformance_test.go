package ranktable

import (
	"testing"
	"time"
)

// buildCPU returns the least CPU time of up to runs Builds of ms, stopping early once
// a run is under stopBelow.
func buildCPU(t *testing.T, ms []Member, runs int, stopBelow time.Duration) time.Duration {
	t.Helper()
	best := time.Duration(1<<63 - 1)
	for range runs {
		start := cpuTime()
		if _, err := Build(ms, BuildOptions{}); err != nil {
			t.Fatal(err)
		}
		best = min(best, cpuTime()-start)
		if best < stopBelow {
			break
		}
	}
	return best
}

// Eight times the pods on one server must cost about eight times as much, not 64
// times (the duplicate-device check once compared every device with every device of
// the server: 1024 pods x 64 devices took seconds).
func TestBuildDuplicateDeviceCheckIsLinearOnOneServer(t *testing.T) {
	if testing.Short() {
		t.Skip("measures CPU time")
	}
	small := buildCPU(t, oneServerMembers(128, 64), 5, 0)
	large := buildCPU(t, oneServerMembers(1024, 64), 3, 24*small)
	if ratio := float64(large) / float64(small); ratio > 24 {
		t.Errorf("1024 pods took %v, 128 pods %v: %.0fx for 8x the pods (quadratic is 64x)", large, small, ratio)
	}
}

// Out-of-range options and nil arguments are errors that name what is wrong, never
// panics.
func TestBadArgumentsAreErrorsNotPanics(t *testing.T) {
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	var nilTemplate *Template
	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"Build with an out-of-range Order", func() error {
			_, err := Build(oneServerMembers(1, 1), BuildOptions{Order: PodIndex + 1})
			return err
		}, "BuildOptions.Order: Order(3) is not a known order"},
		{"Build with a negative Order", func() error {
			_, err := Build(nil, BuildOptions{Order: -1})
			return err
		}, "BuildOptions.Order: Order(-1) is not a known order"},
		{"ParsePod(nil)", func() error { _, err := tm.ParsePod(nil); return err }, "pod is nil"},
		{"ParsePod on a nil Template", func() error { _, err := nilTemplate.ParsePod(nil); return err }, "template is nil"},
		{"ParseAnnotation on a nil Template", func() error { _, err := nilTemplate.ParseAnnotation("{}"); return err }, "template is nil"},
		{"Render(nil)", func() error { _, err := tm.Render(nil, RenderOptions{}); return err }, "ranktable template " + tm.Name + ": table is nil"},
		{"Render on a nil Template", func() error { _, err := nilTemplate.Render(&Table{}, RenderOptions{}); return err }, "template is nil"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panic: %v", r)
					}
				}()
				err = c.call()
			}()
			if err == nil || err.Error() != c.want {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
