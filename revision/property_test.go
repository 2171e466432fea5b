package revision

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/internal/exact"
	"github.com/kplan-dev/kplan/internal/podfixture"
)

// drawInput draws a Plan input from arbitrary states, including ones the state
// machine never reaches: revisions missing from the hub, pods without annotations,
// cold and terminating pods, stray update-order labels.
func drawInput(t *rapid.T) Input {
	var datas []map[string]string
	for i := range rapid.IntRange(1, 5).Draw(t, "revisions") {
		datas = append(datas, data(fmt.Sprint(i)))
	}
	var hub *corev1.ConfigMap
	var revs []string
	if rapid.Bool().Draw(t, "hasHub") {
		var h Hub
		for _, d := range datas[:rapid.IntRange(0, len(datas)).Draw(t, "inHub")] {
			r, err := h.Add(d, 0)
			if err != nil {
				t.Fatal(err)
			}
			h, revs = r.Hub, append(revs, r.Name)
		}
		var err error
		if hub, err = h.HubConfigMap("ns", "cms1", nil); err != nil {
			t.Fatal(err)
		}
	}
	choices := append([]string{"", "gone0000gone0000"}, revs...)
	set := newSet(rapid.SampledFrom(datas).Draw(t, "data"))
	set.Spec.UpdateStrategy.Partition = drawPartition(t)
	if rapid.Bool().Draw(t, "restart") {
		set = newSet(set.Spec.Data, partition(*set.Spec.UpdateStrategy.Partition), restartWith(*drawPartition(t)))
		if set.Spec.UpdateStrategy.MaxUnavailable.String() == "0" || set.Spec.UpdateStrategy.MaxUnavailable.String() == "0%" {
			set.Spec.UpdateStrategy.MaxUnavailable = nil
		}
	}
	set.Spec.InjectUpdateOrder = rapid.Bool().Draw(t, "injectUpdateOrder")
	limit := rapid.Int32Range(0, 3).Draw(t, "limit")
	set.Spec.RevisionHistoryLimit = &limit
	set.Status.CurrentRevision = rapid.SampledFrom(choices).Draw(t, "current")
	if rapid.Bool().Draw(t, "reconciled") {
		set.Status.LastContainersHash = "old"
		ts := metav1.NewTime(t0.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "lastContainers")) * time.Minute))
		set.Status.LastContainersTimestamp = &ts
	}
	var pods []*corev1.Pod
	for i := range rapid.IntRange(0, 12).Draw(t, "pods") {
		opts := []podfixture.Option{podfixture.Labels("app", "sample"), podfixture.Containers("main"),
			podfixture.Created(t0.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "created")) * time.Minute))}
		if w := rapid.SampledFrom(choices).Draw(t, "wanted"); w != "" {
			opts = append(opts, podfixture.Annotation(testKeys.UpdateRevision, w), podfixture.Annotation(testKeys.UpdateRevisionTimestamp, FormatTimestamp(t0)))
		}
		if c := rapid.SampledFrom(choices).Draw(t, "current"); c != "" {
			opts = append(opts, podfixture.Annotation(testKeys.CurrentRevision, c), podfixture.Annotation(testKeys.CurrentRevisionTimestamp, FormatTimestamp(t0)))
		}
		if rapid.Bool().Draw(t, "ready") {
			opts = append(opts, podfixture.Ready())
		} else {
			opts = append(opts, podfixture.NotReady())
		}
		if rapid.IntRange(0, 5).Draw(t, "labelled") == 0 {
			opts = append(opts, podfixture.Labels(testKeys.UpdateOrder, UpdateOrderValue))
		}
		if rapid.IntRange(0, 7).Draw(t, "notInjected") != 0 {
			opts = append(opts, podfixture.InitContainers(ReloadSidecarName("cms1")))
		}
		if rapid.IntRange(0, 9).Draw(t, "terminating") == 0 {
			opts = append(opts, podfixture.Deleting(now))
		}
		pods = append(pods, podfixture.Pod(rapid.SampledFrom([]string{"ns", "ns2"}).Draw(t, "namespace"), fmt.Sprintf("p-%02d", i), opts...))
	}
	return Input{Set: set, Hub: hub, Pods: pods, Now: now}
}

func copyInput(in Input) Input {
	out := Input{Set: in.Set.DeepCopy(), Hub: in.Hub.DeepCopy(), Now: in.Now}
	for _, p := range in.Pods {
		out.Pods = append(out.Pods, p.DeepCopy())
	}
	return out
}

// TestPlanProperties: for arbitrary inputs Plan does not change its input, gives the
// identical result for any pod order, never touches cold, terminating or not injected
// pods, lists exactly the cold ones in Result.Cold, and leaves every warm pod wanting a
// revision the hub holds.
func TestPlanProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := drawInput(t)
		before := copyInput(in)
		res, err := Plan(in)
		if diff := cmp.Diff(before, in, exact.Options); diff != "" {
			t.Fatalf("Plan changed its input (-before +after):\n%s", diff)
		}
		shuffled := in
		shuffled.Pods = rapid.Permutation(in.Pods).Draw(t, "shuffled")
		res2, err2 := Plan(shuffled)
		if fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("pod order changed the error: %v / %v", err, err2)
		}
		if diff := cmp.Diff(res, res2, exact.Options); diff != "" {
			t.Fatalf("pod order changed the result (-pods as drawn +shuffled):\n%s", diff)
		}
		if err != nil {
			t.Fatalf("valid input: %v", err)
		}
		h, err := DecodeHub(res.Hub.ConfigMap)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*corev1.Pod{}
		for _, p := range in.Pods {
			byName[p.Namespace+"/"+p.Name] = p
		}
		var patched []string
		for _, pp := range res.Pods {
			p := byName[pp.Namespace+"/"+pp.Name]
			switch {
			case p == nil:
				t.Fatalf("patch for unknown pod %s/%s", pp.Namespace, pp.Name)
			case p.DeletionTimestamp != nil:
				t.Fatalf("terminating pod %s patched", p.Name)
			case isColdAt(p, res.Status.LastContainersTimestamp):
				t.Fatalf("cold pod %s patched", p.Name)
			case !hasContainer(p, ReloadSidecarName("cms1")):
				t.Fatalf("pod %s without the reload sidecar patched", p.Name)
			}
			patched = append(patched, pp.Namespace+"/"+pp.Name)
		}
		if !slices.IsSorted(patched) {
			t.Fatalf("patches not in name order: %v", patched)
		}
		// Result.Cold is exactly the non-terminating cold pods, in name order, with the
		// reason (not injected wins), and none of them is patched.
		var wantCold []string
		for _, p := range in.Pods {
			var reason kplan.Reason
			switch {
			case p.DeletionTimestamp != nil:
			case !hasContainer(p, ReloadSidecarName("cms1")):
				reason = ReasonNotInjected
			case isColdAt(p, res.Status.LastContainersTimestamp):
				reason = ReasonCreatedBeforeContainersChange
			}
			if reason != "" {
				wantCold = append(wantCold, p.Namespace+"/"+p.Name+" "+string(reason))
			}
		}
		slices.Sort(wantCold)
		var gotCold []string
		for _, c := range res.Cold {
			if c.Message == "" || slices.Contains(patched, c.Namespace+"/"+c.Name) {
				t.Fatalf("cold pod %+v has no message or is patched", c)
			}
			gotCold = append(gotCold, c.Namespace+"/"+c.Name+" "+string(c.Reason))
		}
		if !slices.Equal(gotCold, wantCold) {
			t.Fatalf("cold pods %v, want %v", gotCold, wantCold)
		}
		for _, p := range applyPatches(in.Pods, res.Pods) {
			if p.DeletionTimestamp != nil || isColdAt(p, res.Status.LastContainersTimestamp) || !hasContainer(p, ReloadSidecarName("cms1")) {
				continue
			}
			if w := p.Annotations[testKeys.UpdateRevision]; h.Index(w) < 0 && !in.Set.Spec.UpdateStrategy.RestartInjectedContainers {
				t.Fatalf("pod %s wants %q, not in the hub %v", p.Name, w, h.names())
			}
		}
	})
}
