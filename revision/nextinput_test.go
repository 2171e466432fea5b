package revision

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/podfixture"

	"github.com/kplan-dev/kplan/internal/exact"
)

// A zero Now was written into pod annotations as "-62135596800000", which the next
// reconcile rejects; times outside 1970 to 9999 cannot be written either. Every entry
// point that writes a timestamp rejects them, naming Now.
func TestZeroNowIsRejected(t *testing.T) {
	set := newSet(data("a"))
	for _, tc := range []struct {
		name string
		now  time.Time
	}{
		{"the zero time", time.Time{}},
		{"before the Unix epoch", time.Unix(-1, 0)},
		{"after the year 9999", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Plan(Input{Set: set, Pods: []*corev1.Pod{revPod("p", "", "", true)}, Now: tc.now}); err == nil || !strings.Contains(err.Error(), "configmapset ns/cms1: the time Now") {
				t.Errorf("Plan: err = %v, want one naming Now", err)
			}
			in := injectInput(set, "v1.30.0")
			in.Now = tc.now
			if _, err := Inject(podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main")), in); err == nil || !strings.Contains(err.Error(), ": the time Now") {
				t.Errorf("Inject: err = %v, want one naming Now", err)
			}
			pod := revPod("p", "abc", "", true)
			pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: ReloadSidecarName(set.Name), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(time.Hour))}}}}
			if _, ok, err := MarkCurrent(pod, set, tc.now); ok || err == nil || !strings.Contains(err.Error(), "pod ns/p: the time Now") {
				t.Errorf("MarkCurrent: ok %v, err = %v, want one naming Now", ok, err)
			}
		})
	}
	t.Run("the first and last accepted times", func(t *testing.T) {
		for _, now := range []time.Time{time.Unix(0, 0), lastNow} {
			if _, err := Plan(Input{Set: set, Now: now}); err != nil {
				t.Errorf("Plan at %s: %v", now, err)
			}
		}
	})
}

// endOf9999 is the first time a status timestamp (RFC 3339) cannot hold.
var endOf9999 = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)

// lastNow is the last time accepted as Now: the last whole second of 9999, since
// lastContainersTimestamp is Now rounded up to a second.
var lastNow = endOf9999.Add(-time.Second)

// roundTrip stores v as the API server does (JSON) and reads it back into out.
func roundTrip[T any](t *rapid.T, what string, v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s does not encode: %v", what, err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s does not decode after the API server stores it: %v\n%s", what, err, b)
	}
	return out
}

// Whatever Plan, Inject and MarkCurrent accept, what they write (the hub, the
// status, the pod annotations), stored by the API server and read back, is accepted
// by the next Plan, at the same time or later. Now is drawn from ordinary times and
// the edges (zero, the epoch, before it, the year 9999 and after it).
func TestEveryOutputIsAcceptedAsTheNextInput(t *testing.T) {
	hub0, names := hubOf(t, data("a"), data("b"))
	rapid.Check(t, func(t *rapid.T) {
		now := rapid.OneOf(
			rapid.Custom(func(t *rapid.T) time.Time {
				return t0.Add(time.Duration(rapid.Int64Range(0, int64(1000*time.Hour)).Draw(t, "after")))
			}),
			rapid.SampledFrom([]time.Time{{}, time.Unix(0, 0), time.Unix(0, 1), time.Unix(-1, 0), lastNow, lastNow.Add(time.Millisecond), endOf9999, time.Unix(0, 0).AddDate(100000, 0, 0)}),
		).Draw(t, "now")
		later := now.Add(time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "later")))
		if later.After(lastNow) {
			later = now
		}
		set := newSet(data(rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "data")))
		set.CreationTimestamp = metav1.NewTime(now.Add(-time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "age"))))
		if now.IsZero() {
			set.CreationTimestamp = metav1.NewTime(time.Time{})
		}
		drawStrategy(t, set)
		set.Spec.UpdateStrategy.Partition = drawPartition(t)
		hub := hub0
		revs := append(slices.Clone(names), "")
		var pods []*corev1.Pod
		for i := range rapid.IntRange(0, 5).Draw(t, "pods") {
			p := revPod(fmt.Sprintf("p-%d", i), rapid.SampledFrom(revs).Draw(t, "wanted"), rapid.SampledFrom(revs).Draw(t, "current"), rapid.Bool().Draw(t, "ready"))
			p.CreationTimestamp = set.CreationTimestamp
			pods = append(pods, p)
		}

		// A pod created now by the webhook.
		fresh := podfixture.Pod("ns", "new", podfixture.Labels("app", "sample"), podfixture.Containers("main"), podfixture.Created(now))
		in := injectInput(set, "v1.30.0")
		in.Pods, in.Now = pods, now
		_, injectErr := Inject(fresh, in)
		res, planErr := Plan(Input{Set: set, Hub: hub, Pods: pods, Now: now})
		valid := !now.Before(time.Unix(0, 0)) && !now.After(lastNow)
		if (injectErr == nil) != (planErr == nil) {
			t.Fatalf("now %s: Inject: %v, Plan: %v", now, injectErr, planErr)
		}
		if planErr != nil {
			if valid {
				t.Fatalf("now %s: %v", now, planErr)
			}
			return
		}
		// Plan took now: its outputs must be valid inputs (checked first, so a time
		// accepted by mistake shows the failure it causes), and now must be valid.
		defer func() {
			if !valid {
				t.Fatalf("now %s was accepted", now)
			}
		}()

		// What the API server stores.
		next := set.DeepCopy()
		next.Status = res.Status
		next = roundTrip(t, "the set with the new status", next)
		hub = roundTrip(t, "the hub", res.Hub.ConfigMap)
		stored := []*corev1.Pod{roundTrip(t, "the injected pod", fresh)}
		for _, p := range applyPatches(pods, res.Pods) {
			stored = append(stored, roundTrip(t, "pod "+p.Name, p))
		}
		// The node side confirms each pod once its sidecar restarted.
		for i, p := range stored {
			p = p.DeepCopy()
			started := metav1.NewTime(later)
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: ReloadSidecarName(set.Name), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}
			pp, ok, err := MarkCurrent(p, next, later)
			if err != nil {
				t.Fatalf("MarkCurrent on pod %s: %v", p.Name, err)
			}
			if ok {
				stored[i] = roundTrip(t, "confirmed pod "+p.Name, pp.Apply(p))
			}
		}

		for _, at := range []time.Time{now, later} {
			again, err := Plan(Input{Set: next, Hub: hub, Pods: stored, Now: at})
			if err != nil {
				t.Fatalf("the next Plan at %s rejects the outputs of the one at %s: %v", at, now, err)
			}
			if diff := cmp.Diff(next.Status.LastContainersTimestamp, again.Status.LastContainersTimestamp, exact.Options); diff != "" {
				t.Fatalf("lastContainersTimestamp changed on the next Plan at %s (-first +next):\n%s", at, diff)
			}
		}
	})
}
