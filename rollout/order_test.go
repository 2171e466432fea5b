package rollout_test

import (
	"slices"
	"testing"

	"github.com/kplan-dev/kplan/rollout"
)

func TestSortRevisions(t *testing.T) {
	tests := []struct {
		name    string
		revs    []string
		history []string
		want    []string
	}{
		{"generations order numerically, not as text", []string{"10-x", "9-y", "2-z"}, nil, []string{"2-z", "9-y", "10-x"}},
		{"history wins over generations", []string{"1-a", "2-b"}, []string{"2-b", "1-a"}, []string{"2-b", "1-a"}},
		{"revisions outside history are older than those in it", []string{"abc", "1-a", "5-e"}, []string{"1-a"}, []string{"abc", "5-e", "1-a"}},
		{"hashes without a generation order naturally and first", []string{"h10", "h9", "3-c"}, nil, []string{"h9", "h10", "3-c"}},
		{"duplicates collapse", []string{"2-b", "1-a", "2-b"}, nil, []string{"1-a", "2-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.revs)
			if got := rollout.SortRevisions(in, tt.history); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if !slices.Equal(in, tt.revs) {
				t.Fatal("input modified")
			}
		})
	}
}

func TestGeneration(t *testing.T) {
	tests := []struct {
		rev  string
		want int64
		ok   bool
	}{
		{"3-abc", 3, true}, {"12-x-y", 12, true}, {"abc", 0, false}, {"-3", 0, false},
		{"x-3", 0, false}, {"99999999999999999999-a", 0, false}, {"3", 0, false},
		{"+5-a", 0, false}, {" 5-a", 0, false}, // found by FuzzGeneration: a sign is not a generation
	}
	for _, tt := range tests {
		t.Run("generation of "+tt.rev, func(t *testing.T) {
			got, ok := rollout.Generation(tt.rev)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("got %d %v, want %d %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCompareReplicas(t *testing.T) {
	failed := rollout.Replica{Name: "z-failed", State: rollout.State{Failed: true}}
	unready := rollout.Replica{Name: "y-unready", State: rollout.State{Healthy: true}}
	notAvail := rollout.Replica{Name: "x-ready", State: rollout.State{Ready: true, Healthy: true}}
	lowPrio := rollout.Replica{Name: "w-low", State: ready, Priority: -1}
	cheap := rollout.Replica{Name: "v-cheap", State: ready, DeletionCost: -5}
	r9 := rollout.Replica{Name: "r-9", State: ready}
	r10 := rollout.Replica{Name: "r-10", State: ready}
	// Least healthy first, then priority, then deletion cost, then natural name.
	want := []rollout.Replica{failed, unready, notAvail, lowPrio, cheap, r9, r10}
	got := []rollout.Replica{r10, cheap, r9, notAvail, lowPrio, failed, unready}
	slices.SortFunc(got, func(a, b rollout.Replica) int { return rollout.CompareReplicas(&a, &b) })
	for i := range want {
		if got[i].Name != want[i].Name {
			t.Fatalf("position %d: got %s, want %s", i, got[i].Name, want[i].Name)
		}
	}
}
