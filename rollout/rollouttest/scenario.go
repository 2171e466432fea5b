package rollouttest

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
)

// String describes the scenario for people reading a failed test: the
// strategy on the first line, then one line per replica with its revision,
// data, column, state, priority and deletion cost (for a gang, each member's
// state). Fields at their zero value are left out. It is not meant to be parsed.
//
//	Rolling to 2-b, 3 replicas, maxUnavailable 1, maxSurge 0, order LessFirst
//	  r-0 1-a available
//	  r-1 1-a not ready, priority 1
//	  r-2 2-b failed
func (sc Scenario) String() string {
	var b strings.Builder
	b.WriteString(describeStrategy(sc.Strategy, sc.GangSize))
	for _, r := range sc.Replicas {
		b.WriteString("\n  ")
		b.WriteString(describeReplica(r))
	}
	return b.String()
}

func describeStrategy(s rollout.Strategy, gangSize int) string {
	var parts []string
	mode := s.Mode
	if mode == "" {
		mode = rollout.Rolling
	}
	target := fmt.Sprintf("%s to %s", mode, quoteEmpty(s.TargetRevision))
	if s.TargetDataRevision != "" {
		target += " and data " + s.TargetDataRevision
	}
	parts = append(parts, target)
	switch s.Mode {
	case rollout.Gang:
		parts = append(parts, fmt.Sprintf("%s of %s", count(s.Replicas, "gang"), count(gangSize, "member")))
	case rollout.Group:
		cols := count(s.Replicas, "row")
		if len(s.Columns) > 0 {
			cols += " x columns " + strings.Join(s.Columns, " ")
		}
		parts = append(parts, cols)
	default:
		parts = append(parts, count(s.Replicas, "replica"))
	}
	budget := func(name string, v *intstr.IntOrString, def intstr.IntOrString) string {
		if v == nil {
			return fmt.Sprintf("%s %s (default)", name, def.String())
		}
		return fmt.Sprintf("%s %s", name, v.String())
	}
	parts = append(parts, budget("maxUnavailable", s.MaxUnavailable, rollout.DefaultMaxUnavailable),
		budget("maxSurge", s.MaxSurge, rollout.DefaultMaxSurge))
	if s.LatestRatio != nil {
		parts = append(parts, "latestRatio "+s.LatestRatio.String())
	}
	order := s.VersionOrder
	if order == "" {
		order = rollout.LessFirst
	}
	parts = append(parts, "order "+string(order))
	if len(s.History) > 0 {
		parts = append(parts, "history "+strings.Join(s.History, " "))
	}
	return strings.Join(parts, ", ")
}

// count is "1 gang", "2 gangs".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func describeReplica(r rollout.Replica) string {
	head := r.Name + " " + quoteEmpty(r.Revision)
	if r.DataRevision != "" {
		head += " data " + r.DataRevision
	}
	if r.Column != "" {
		head += " column " + r.Column
	}
	if r.Index != 0 {
		head += fmt.Sprintf(" index %d", r.Index)
	}
	var parts []string
	if len(r.Members) == 0 {
		parts = append(parts, describeState(r.State))
	} else {
		ms := make([]string, len(r.Members))
		for i, m := range r.Members {
			ms[i] = m.Name
			if m.Column != "" && m.Name != memberName(r.Name, m.Column) {
				ms[i] = strings.TrimSpace(m.Name + " (" + m.Column + ")")
			}
			if m.Revision != "" && m.Revision != r.Revision {
				ms[i] += " " + m.Revision
			}
			if m.Missing {
				ms[i] += " missing"
			} else {
				ms[i] += " " + describeState(m.State)
			}
		}
		head += " [" + strings.Join(ms, "; ") + "]"
		// A gang's own state counts only for these.
		if r.State.Failed {
			parts = append(parts, "failed")
		}
		if r.State.Lost {
			parts = append(parts, "lost")
		}
		if r.State.Terminating {
			parts = append(parts, "terminating")
		}
	}
	if r.Priority != 0 {
		parts = append(parts, fmt.Sprintf("priority %d", r.Priority))
	}
	if r.DeletionCost != 0 {
		parts = append(parts, fmt.Sprintf("cost %d", r.DeletionCost))
	}
	if r.ReplacementFor != "" {
		parts = append(parts, "replacing "+r.ReplacementFor)
	}
	if !r.SwappedAt.IsZero() {
		parts = append(parts, "swapped out at "+r.SwappedAt.UTC().Format(time.RFC3339))
	}
	if len(parts) == 0 {
		return head
	}
	return head + " " + strings.Join(parts, ", ")
}

// describeState names a state: available, ready (not yet available), not
// ready, failed, with what else is set.
func describeState(s rollout.State) string {
	var parts []string
	switch {
	case s.Failed:
		parts = append(parts, "failed")
	case s.Ready && s.Healthy && s.Available:
		parts = append(parts, "available")
	case s.Ready && s.Healthy:
		parts = append(parts, "ready")
	case s.Ready:
		parts = append(parts, "ready but unhealthy")
	case s.Healthy:
		parts = append(parts, "not ready")
	default:
		parts = append(parts, "not ready, unhealthy")
	}
	if s.Available && !(s.Ready && s.Healthy) && !s.Failed {
		parts = append(parts, "marked available")
	}
	if s.Lost {
		parts = append(parts, "lost")
	}
	if s.Terminating {
		parts = append(parts, "terminating")
	}
	if !s.ReadySince.IsZero() {
		parts = append(parts, "ready since "+s.ReadySince.UTC().Format(time.RFC3339))
	}
	if !s.UnreadySince.IsZero() {
		parts = append(parts, "unready since "+s.UnreadySince.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, ", ")
}
