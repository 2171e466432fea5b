package cli

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// simulation is a whole simulated rollout.
type simulation struct {
	Mode           string    `json:"mode"`
	TargetRevision string    `json:"targetRevision"`
	Replicas       int       `json:"replicas"`
	Budget         budgetOut `json:"budget"`
	Reconciles     int       `json:"reconciles"`
	Steps          []simStep `json:"steps"`
}

type simStep struct {
	Reconcile int      `json:"reconcile"`
	Complete  bool     `json:"complete,omitempty"`
	Update    []string `json:"update,omitempty"`
	Create    []string `json:"create,omitempty"`
	Delete    []string `json:"delete,omitempty"`
	Repair    []string `json:"repair,omitempty"`
	Waiting   int      `json:"waiting"`
	Latest    int      `json:"latest"`
	// Available and AtTarget count replicas after the step's actions, out of Total.
	Available int `json:"available"`
	AtTarget  int `json:"atTarget"`
	Total     int `json:"total"`
}

// Table prints the simulation as a table.
func (s simulation) Table() []byte {
	var b buffer
	fmt.Fprintf(&b, "%s rollout to %s: %d replicas, maxUnavailable %d, maxSurge %d\n",
		s.Mode, s.TargetRevision, s.Replicas, s.Budget.MaxUnavailable, s.Budget.MaxSurge)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RECONCILE\tUPDATE\tCREATE\tDELETE\tREPAIR\tWAITING\tLATEST\tAVAILABLE\tAT TARGET")
	for _, st := range s.Steps {
		fmt.Fprintf(tw, "%d\t%s\n", st.Reconcile, st.row())
	}
	_ = tw.Flush()
	return b.Bytes()
}

// row is the step's columns from UPDATE to AT TARGET, tab-separated.
func (st simStep) row() string {
	if st.Complete {
		return fmt.Sprintf("complete\t\t\t\t\t%d\t%d/%d\t%d/%d", st.Latest, st.Available, st.Total, st.AtTarget, st.Total)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d\t%d/%d\t%d/%d", list(st.Update), list(st.Create), list(st.Delete),
		list(st.Repair), st.Waiting, st.Latest, st.Available, st.Total, st.AtTarget, st.Total)
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

// MaxSimulatedPods bounds the pods a simulation may create, so a large replica count
// in the input cannot make the simulation run out of memory.
const MaxSimulatedPods = 10000

// simulate runs the rollout to completion in rollouttest's simulator.
func simulate(strategy rollout.Strategy, replicas []rollout.Replica, maxSteps int) (simulation, error) {
	sim, _, err := newSimulator(strategy, replicas)
	if err != nil {
		return simulation{}, err
	}
	out := simulation{Mode: strings.ToLower(string(strategy.Mode)), TargetRevision: strategy.TargetRevision, Replicas: strategy.Replicas}
	for range maxSteps {
		step, err := sim.Reconcile()
		if err != nil {
			return out, fmt.Errorf("simulation: %v", err)
		}
		out.Budget = budgetOut(step.Budget)
		out.Steps = append(out.Steps, toSimStep(sim.Reconciles, step, sim.Replicas, strategy.TargetRevision))
		out.Reconciles = sim.Reconciles
		if step.Complete {
			return out, nil
		}
		sim.Settle(nil)
	}
	return out, fmt.Errorf("simulation: not complete after %d reconciles (--max-steps)", maxSteps)
}

// newSimulator starts rollouttest's simulator on replicas, and returns the pods the
// rollout may have at most. A gang it creates has a member in each of the
// strategy's columns, or without columns as many as the largest gang.
func newSimulator(strategy rollout.Strategy, replicas []rollout.Replica) (*rollouttest.Simulator, int, error) {
	gangSize := len(strategy.Columns)
	if strategy.Mode == rollout.Gang && gangSize == 0 {
		for _, r := range replicas {
			gangSize = max(gangSize, len(r.Members))
		}
	}
	pods := strategy.Replicas
	switch strategy.Mode {
	case rollout.Gang:
		pods *= max(gangSize, 1)
	case rollout.Group:
		columns := map[string]bool{}
		for _, c := range strategy.Columns {
			columns[c] = true
		}
		for _, r := range replicas {
			columns[r.Column] = true
		}
		pods *= max(len(columns), 1)
	}
	if strategy.Replicas > MaxSimulatedPods || gangSize > MaxSimulatedPods || pods > MaxSimulatedPods {
		return nil, 0, fmt.Errorf("simulation: %d replicas (%d pods) is more than the %d pods kplan simulates", strategy.Replicas, pods, MaxSimulatedPods)
	}
	return rollouttest.NewSimulator(rollouttest.Scenario{Strategy: strategy, Replicas: replicas, GangSize: gangSize}, rollouttest.NoFaults), pods, nil
}

// toSimStep is a simulated step as printed, with the replicas after its actions.
func toSimStep(reconcile int, step rollout.Step, after []rollout.Replica, target string) simStep {
	st := simStep{Reconcile: reconcile, Complete: step.Complete, Waiting: len(step.Waiting), Latest: step.Latest}
	st.Update = convert(step.Update, func(u rollout.Update) string { return u.Replica })
	st.Create = convert(step.Create, func(c rollout.Create) string { return c.Revision + "@" + slot(c.Column, c.Index) })
	st.Delete = convert(step.Delete, func(d rollout.Delete) string { return d.Replica })
	st.Repair = convert(step.Repair, func(r rollout.Repair) string {
		return fmt.Sprintf("%s[%s]", r.Replica, strings.Join(r.Missing, " "))
	})
	for _, r := range rollouttest.Counted(after) {
		st.Total++
		if rollouttest.Available(r) {
			st.Available++
		}
		if r.Revision == target {
			st.AtTarget++
		}
	}
	return st
}

// slot is how a simulation table names a create's slot: its index, after its
// column when it has one (column/index).
func slot(column string, index int) string {
	if column == "" {
		return strconv.Itoa(index)
	}
	return column + "/" + strconv.Itoa(index)
}
