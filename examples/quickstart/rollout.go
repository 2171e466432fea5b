package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// This file holds the rollout sections: a gang and a group rolling update, reconcile by reconcile.

func available() rollout.State { return rollout.State{Ready: true, Available: true, Healthy: true} }

func gangRollout(w io.Writer) error {
	// Three gang replicas (serving groups), each a row of two member pods that are
	// updated together, from revision 1-a to 2-b, one gang unavailable at a time.
	var replicas []rollout.Replica
	columns := []string{"leader", "worker"}
	for g := range 3 {
		name := fmt.Sprintf("group-%d", g)
		r := rollout.Replica{Name: name, Index: g, Revision: "1-a"}
		for _, m := range columns {
			r.Members = append(r.Members, rollout.Member{Name: name + "-" + m, Column: m, State: available()})
		}
		replicas = append(replicas, r)
	}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	strategy := rollout.Strategy{
		Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 3, Columns: columns,
		MaxUnavailable: &one, MaxSurge: &zero,
	}
	fmt.Fprintln(w, "3 gangs of 2 pods (leader, worker) at 1-a -> 2-b; maxUnavailable 1, maxSurge 0")
	return simulate(w, rollouttest.Scenario{Strategy: strategy, Replicas: replicas, GangSize: 2})
}

func groupRollout(w io.Writer) error {
	// A rows x columns service: 4 rows of prefill and decode, each column keeping at
	// least 3 of 4 replicas available while the latest version's window slides.
	var replicas []rollout.Replica
	for _, col := range []string{"decode", "prefill"} {
		for row := range 4 {
			rev := "1-a"
			if col == "prefill" && row == 0 {
				rev = "2-b" // prefill already runs one replica ahead
			}
			replicas = append(replicas, rollout.Replica{
				Name: fmt.Sprintf("%s-%d", col, row), Index: row, Revision: rev, Column: col, State: available(),
			})
		}
	}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	strategy := rollout.Strategy{
		Mode: rollout.Group, TargetRevision: "2-b", Replicas: 4,
		MaxUnavailable: &one, MaxSurge: &zero,
	}
	fmt.Fprintln(w, "2 columns (decode, prefill) x 4 rows at 1-a -> 2-b, prefill-0 already at 2-b; maxUnavailable 1 per column")
	return simulate(w, rollouttest.Scenario{Strategy: strategy, Replicas: replicas})
}

// simulate plans and applies steps until the rollout completes, the way a controller
// and the cluster would: an updated replica becomes available one reconcile later.
// Every step is checked against the rollout invariants.
func simulate(w io.Writer, sc rollouttest.Scenario) error {
	sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
	fmt.Fprintf(w, "  start:       %s\n", describeReplicas(sim.Replicas, sc.Strategy.TargetRevision))
	for range 20 {
		step, err := sim.Reconcile()
		if err != nil {
			return err
		}
		if step.Complete {
			fmt.Fprintf(w, "  reconcile %d: complete\n", sim.Reconciles)
			return nil
		}
		fmt.Fprintf(w, "  reconcile %d: %s\n", sim.Reconciles, describeStep(step, sc.Strategy.Mode))
		fmt.Fprintf(w, "       after: %s\n", describeReplicas(sim.Replicas, sc.Strategy.TargetRevision))
		// The cluster catches up: updated replicas become available.
		sim.Settle(nil)
	}
	return fmt.Errorf("not complete after %d reconciles", sim.Reconciles)
}

func describeStep(step rollout.Step, mode rollout.Mode) string {
	var parts []string
	for _, u := range step.Update {
		s := fmt.Sprintf("update %s %s->%s", u.Replica, u.From, u.To)
		if mode == rollout.Gang {
			s += " [" + strings.Join(u.Pods, " ") + "]"
		}
		if len(u.Missing) > 0 {
			s += " creating [" + strings.Join(u.Missing, " ") + "]"
		}
		parts = append(parts, s)
	}
	for _, c := range step.Create {
		parts = append(parts, fmt.Sprintf("create index %d at %s%s", c.Index, c.Revision, inColumn(c.Column)))
	}
	for _, d := range step.Delete {
		parts = append(parts, "delete "+d.Replica)
	}
	for _, r := range step.Repair {
		parts = append(parts, fmt.Sprintf("repair %s at %s%s [%s]", r.Replica, r.Revision, inColumn(r.Column), strings.Join(r.Missing, " ")))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing to do")
	}
	s := strings.Join(parts, ", ")
	if mode == rollout.Group {
		s += fmt.Sprintf("; window: %d per column at the target", step.Latest)
	}
	if n := len(step.Waiting); n > 0 {
		reasons := map[string]int{}
		for _, wt := range step.Waiting {
			reasons[wt.Message]++
		}
		var rs []string
		for r, c := range reasons {
			rs = append(rs, fmt.Sprintf("%d (%s)", c, r))
		}
		sort.Strings(rs)
		s += "; waiting: " + strings.Join(rs, ", ")
	}
	return s
}

func inColumn(c string) string {
	if c == "" {
		return ""
	}
	return " in " + c
}

// describeReplicas prints each replica as name@revision, with * when it is not
// available (yet), and how many are done.
func describeReplicas(replicas []rollout.Replica, target string) string {
	sorted := append([]rollout.Replica(nil), replicas...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var parts []string
	done := 0
	for _, r := range sorted {
		mark := ""
		if !rollouttest.Available(&r) {
			mark = "*"
		}
		if r.Revision == target && mark == "" {
			done++
		}
		parts = append(parts, fmt.Sprintf("%s@%s%s", r.Name, r.Revision, mark))
	}
	return fmt.Sprintf("%s  [%d/%d available at %s]", strings.Join(parts, " "), done, len(sorted), target)
}
