package rollout_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/podfixture"

	"github.com/kplan-dev/kplan/rollout"
)

// Errors are output too: for any replicas, valid or not, every order gives the same
// error text (or none) from Plan and PlanRecover. The generator draws from a few
// names, so empty and repeated names, and replicas with several problems, are common.
func TestErrorsDoNotDependOnReplicaOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 8).Draw(t, "n")
		replicas := make([]rollout.Replica, n)
		for i := range replicas {
			r := &replicas[i]
			r.Name = rapid.SampledFrom([]string{"", "r-1", "r-2", "r-10", "r-01", strings.Repeat("x", rollout.MaxNameLength+1)}).Draw(t, "name")
			r.Revision = rapid.SampledFrom([]string{"", "1-a", "2-b"}).Draw(t, "revision")
			r.Column = rapid.SampledFrom([]string{"", "c0", "c1"}).Draw(t, "column")
			r.State.Ready = rapid.Bool().Draw(t, "ready")
			r.Index = rapid.SampledFrom([]int{0, 1, -1}).Draw(t, "index")
			for range rapid.IntRange(0, 2).Draw(t, "members") {
				r.Members = append(r.Members, rollout.Member{Name: rapid.SampledFrom([]string{"", "m-0", "m-1"}).Draw(t, "member"),
					Column: rapid.SampledFrom([]string{"", "0", "1"}).Draw(t, "memberColumn"), Missing: rapid.Bool().Draw(t, "missing")})
			}
		}
		mode := rapid.SampledFrom(modes).Draw(t, "mode")
		s := rollout.Strategy{Mode: mode, TargetRevision: "2-b", Replicas: n}
		shuffled := rapid.Permutation(replicas).Draw(t, "shuffled")

		_, err1 := rollout.Plan(replicas, s)
		_, err2 := rollout.Plan(shuffled, s)
		if errText(err1) != errText(err2) {
			t.Fatalf("Plan's error depends on the order:\n%v\n%v", err1, err2)
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		_, err1 = rollout.PlanRecover(replicas, rollout.RecoverPolicy{}, now)
		_, err2 = rollout.PlanRecover(shuffled, rollout.RecoverPolicy{}, now)
		if errText(err1) != errText(err2) {
			t.Fatalf("PlanRecover's error depends on the order:\n%v\n%v", err1, err2)
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FromPods' errors do not depend on the order of the pods either: pods missing
// labels, with bad deletion costs, indexes or swap times, and gangs whose pods
// share a column or disagree on the index or the replica they replace, in any
// order.
func TestFromPodsErrorsDoNotDependOnPodOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gangs := rapid.Bool().Draw(t, "gangs")
		opts := rollout.PodOptions{Labels: rollout.DefaultLabels}
		if gangs {
			opts.Labels = rollout.KthenaLabels
			if rapid.Bool().Draw(t, "columns") {
				opts.Columns = []string{"prefill", "decode"}
			}
		}
		opts.Labels.Index = "index"
		var pods []*corev1.Pod
		for i := range rapid.IntRange(1, 8).Draw(t, "n") {
			var o []podfixture.Option
			if rev := rapid.SampledFrom([]string{"", "1-a"}).Draw(t, "revision"); rev != "" {
				o = append(o, podfixture.Labels(opts.Labels.Revision, rev))
			}
			if gangs {
				if g := rapid.SampledFrom([]string{"", "g-0", "g-1"}).Draw(t, "gang"); g != "" {
					o = append(o, podfixture.Labels(opts.Labels.Gang, g))
				}
				o = append(o, podfixture.Labels(opts.Labels.Column, rapid.SampledFrom([]string{"prefill", "decode", "other"}).Draw(t, "column")))
			}
			if i := rapid.SampledFrom([]string{"", "0", "1", "-1"}).Draw(t, "index"); i != "" {
				o = append(o, podfixture.Labels(opts.Labels.Index, i))
			}
			if rapid.IntRange(0, 3).Draw(t, "badCost") == 0 {
				o = append(o, podfixture.Annotation(rollout.DeletionCostAnnotation, "many"))
			}
			if f := rapid.SampledFrom([]string{"", "g-0", "g-1"}).Draw(t, "replacementFor"); f != "" {
				o = append(o, podfixture.Annotation(rollout.DefaultAnnotations.ReplacementFor, f))
			}
			if at := rapid.SampledFrom([]string{"", "2026-01-01T00:00:00Z", "soon"}).Draw(t, "swappedAt"); at != "" {
				o = append(o, podfixture.Annotation(rollout.DefaultAnnotations.SwappedAt, at))
			}
			pods = append(pods, podfixture.Pod("default", fmt.Sprintf("p-%d", i), o...))
		}
		_, err1 := rollout.FromPods(pods, opts)
		_, err2 := rollout.FromPods(rapid.Permutation(pods).Draw(t, "shuffled"), opts)
		if errText(err1) != errText(err2) {
			t.Fatalf("FromPods' error depends on the order:\n%v\n%v", err1, err2)
		}
	})
}
