package rollout_test

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// freeIndexes returns, per pool (a column in group mode, else ""), the first n
// indexes no replica that is not terminating holds, computed the slow way.
func freeIndexes(replicas []rollout.Replica, byColumn bool, pool string, n int) []int {
	held := map[int]bool{}
	for i := range replicas {
		r := &replicas[i]
		key := ""
		if byColumn {
			key = r.Column
		}
		if key == pool && !r.Effective().Terminating {
			held[r.Index] = true
		}
	}
	var out []int
	for i := 0; len(out) < n; i++ {
		if !held[i] {
			out = append(out, i)
		}
	}
	return out
}

// TestCreatesTakeTheLowestFreeIndexes: in every mode, the replicas a step
// creates in a pool take, in the order listed, the lowest indexes that no
// replica of the pool holds (terminating ones hold none; indexes drawn with
// gaps and repeats), and a gang's create lists the strategy's columns. Shuffled
// input gives the same indexes. The creates rapid meets are counted, so the
// property cannot pass on steps that create nothing.
func TestCreatesTakeTheLowestFreeIndexes(t *testing.T) {
	created := 0
	rapid.Check(t, func(t *rapid.T) {
		mode := rapid.SampledFrom(modes).Draw(t, "mode")
		sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
		for i := range sc.Replicas {
			if len(sc.Replicas[i].Members) == 0 && rapid.IntRange(0, 9).Draw(t, "terminating") == 0 {
				sc.Replicas[i].State.Terminating = true
			}
		}
		step, err := rollout.Plan(sc.Replicas, sc.Strategy)
		if err != nil {
			t.Fatal(err)
		}
		byPool := map[string][]int{}
		for _, c := range step.Create {
			byPool[c.Column] = append(byPool[c.Column], c.Index)
			if want := sc.Strategy.Columns; mode == rollout.Gang && !slices.Equal(c.Members, want) {
				t.Fatalf("gang create lists members %v, want the strategy's columns %v", c.Members, want)
			}
			if mode != rollout.Gang && len(c.Members) > 0 {
				t.Fatalf("a create of a single pod lists members %v", c.Members)
			}
		}
		for pool, got := range byPool {
			if want := freeIndexes(sc.Replicas, mode == rollout.Group, pool, len(got)); !slices.Equal(got, want) {
				t.Fatalf("pool %q: creates at %v, want the lowest free %v\n%s", pool, got, want, sc)
			}
			created += len(got)
		}
		again, err := rollout.Plan(rollouttest.Shuffled(t, sc.Replicas), sc.Strategy)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(step.Create, again.Create, func(a, b rollout.Create) bool {
			return a.Index == b.Index && a.Column == b.Column && a.Revision == b.Revision
		}) {
			t.Fatalf("shuffled input creates %+v, not %+v", again.Create, step.Create)
		}
	})
	if created == 0 {
		t.Fatal("no step created a replica: the property checked nothing")
	}
}

// TestReplacementsTakeTheLowestFreeIndexes: PlanRecover starts each
// replacement in the lowest index of its column that no replica holds and no
// earlier replacement of the step takes, and lists a gang's member columns.
func TestReplacementsTakeTheLowestFreeIndexes(t *testing.T) {
	started := 0
	rapid.Check(t, func(t *rapid.T) {
		mode := rapid.SampledFrom(modes).Draw(t, "mode")
		sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
		step, err := rollout.PlanRecover(sc.Replicas, rollout.RecoverPolicy{}, t0)
		if err != nil {
			t.Fatal(err)
		}
		byColumn := map[string][]int{}
		for _, rep := range step.Replace {
			byColumn[rep.Column] = append(byColumn[rep.Column], rep.Index)
			i := slices.IndexFunc(sc.Replicas, func(r rollout.Replica) bool { return r.Name == rep.For })
			var want []string
			for _, m := range sc.Replicas[i].Members {
				want = append(want, m.Column)
			}
			if !slices.Equal(rep.Members, want) {
				t.Fatalf("replacement of %s lists members %v, want its columns %v", rep.For, rep.Members, want)
			}
		}
		for col, got := range byColumn {
			if want := freeIndexes(sc.Replicas, true, col, len(got)); !slices.Equal(got, want) {
				t.Fatalf("column %q: replacements at %v, want the lowest free %v\n%s", col, got, want, sc)
			}
			started += len(got)
		}
	})
	if started == 0 {
		t.Fatal("no replacement was started: the property checked nothing")
	}
}

// TestIndexesOfCreates shows the rule on small cases: gaps are filled first,
// a terminating replica's index is free, a swapped-out replica's and a
// replacement's are not, and in group mode each column counts its own rows.
func TestIndexesOfCreates(t *testing.T) {
	at := func(name string, index int) rollout.Replica {
		return rollout.Replica{Name: name, Index: index, Revision: "2-b", State: ready}
	}
	going := at("r-9", 1)
	going.State.Terminating = true
	swapped := at("r-8", 1)
	swapped.SwappedAt = t0
	replacing := at("r-7", 1)
	replacing.ReplacementFor = "r-8"
	tests := []struct {
		name     string
		replicas []rollout.Replica
		strategy rollout.Strategy
		want     string
	}{
		{"a gap is filled first", []rollout.Replica{at("r-0", 0), at("r-2", 2)},
			rollout.Strategy{TargetRevision: "2-b", Replicas: 4}, "[2-b@1 2-b@3]"},
		{"repeated indexes hold one index", []rollout.Replica{at("r-0", 0), at("r-1", 0)},
			rollout.Strategy{TargetRevision: "2-b", Replicas: 3}, "[2-b@1]"},
		{"a terminating replica holds no index", []rollout.Replica{at("r-0", 0), going},
			rollout.Strategy{TargetRevision: "2-b", Replicas: 2}, "[2-b@1]"},
		{"a swapped-out replica holds its index", []rollout.Replica{at("r-0", 0), swapped},
			rollout.Strategy{TargetRevision: "2-b", Replicas: 2}, "[2-b@2]"},
		// r-7 replaces r-8, which is gone: it is counted in its place.
		{"a replacement holds its index", []rollout.Replica{at("r-0", 0), replacing},
			rollout.Strategy{TargetRevision: "2-b", Replicas: 3}, "[2-b@2]"},
		{"group mode counts rows per column", func() []rollout.Replica {
			a, b := at("a-0", 0), at("b-1", 1)
			a.Column, b.Column = "a", "b"
			return []rollout.Replica{a, b}
		}(), rollout.Strategy{Mode: rollout.Group, TargetRevision: "2-b", Replicas: 2}, "[a/2-b@1 b/2-b@0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, err := rollout.Plan(tt.replicas, tt.strategy)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(created(step)); got != tt.want {
				t.Fatalf("creates %s, want %s", got, tt.want)
			}
		})
	}
}
