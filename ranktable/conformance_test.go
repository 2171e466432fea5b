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
