package inplace

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

// res builds resource requirements from name=quantity pairs: "r:cpu=1" is a
// request, "l:cpu=2" a limit.
func res(kv ...string) corev1.ResourceRequirements {
	var r corev1.ResourceRequirements
	for _, s := range kv {
		kind, rest := s[:1], s[2:]
		var name, q string
		for i := range rest {
			if rest[i] == '=' {
				name, q = rest[:i], rest[i+1:]
			}
		}
		l := &r.Requests
		if kind == "l" {
			l = &r.Limits
		}
		if *l == nil {
			*l = corev1.ResourceList{}
		}
		(*l)[corev1.ResourceName(name)] = resource.MustParse(q)
	}
	return r
}

// sized is a template of one container, the engine running image with
// resources r.
func sized(image string, r corev1.ResourceRequirements) corev1.PodTemplateSpec {
	t := template(image)
	t.Spec.Containers[0].Resources = r
	return t
}

// TestInPlaceChangesResize: which resource changes move a pod in place (the
// ones the resize subresource accepts: cpu and memory requests and limits,
// none removed, the QoS class kept) and which recreate it.
func TestInPlaceChangesResize(t *testing.T) {
	burstable := res("r:cpu=1", "r:memory=1Gi", "l:cpu=2", "l:memory=2Gi")
	withPolicy := sized("e:v1", res("r:cpu=1", "r:memory=1Gi", "l:cpu=2", "l:memory=4Gi"))
	withPolicy.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	podLevel := sized("e:v1", burstable)
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}
	podLevelTo := sized("e:v1", res("r:cpu=2", "r:memory=1Gi", "l:cpu=2", "l:memory=2Gi"))
	podLevelTo.Spec.Resources = podLevel.Spec.Resources
	initFrom := sized("e:v1", burstable)
	initFrom.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "i:v1", Resources: res("r:cpu=1")}}
	initTo := sized("e:v1", res("r:cpu=2", "r:memory=1Gi", "l:cpu=2", "l:memory=2Gi"))
	initTo.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "i:v1", Resources: res("r:cpu=2")}}
	for _, tc := range []struct {
		name      string
		from, to  corev1.PodTemplateSpec
		inPlace   bool
		resources []string // containers resized
		images    []string // containers with a new image
	}{
		{"cpu request raised", sized("e:v1", burstable), sized("e:v1", res("r:cpu=2", "r:memory=1Gi", "l:cpu=2", "l:memory=2Gi")), true, []string{"engine"}, nil},
		{"memory limit raised and a new image", sized("e:v1", burstable), sized("e:v2", res("r:cpu=1", "r:memory=1Gi", "l:cpu=2", "l:memory=3Gi")), true, []string{"engine"}, []string{"engine"}},
		{"the same quantity spelled otherwise", sized("e:v1", burstable), sized("e:v1", res("r:cpu=1000m", "r:memory=1Gi", "l:cpu=2", "l:memory=2Gi")), true, nil, nil},
		{"a cpu limit added", sized("e:v1", res("r:cpu=1", "r:memory=1Gi")), sized("e:v1", res("r:cpu=1", "r:memory=1Gi", "l:cpu=2")), true, []string{"engine"}, nil},
		{"guaranteed stays guaranteed", sized("e:v1", res("l:cpu=1", "l:memory=1Gi")), sized("e:v1", res("r:cpu=2", "r:memory=1Gi", "l:cpu=2", "l:memory=1Gi")), true, []string{"engine"}, nil},
		{"guaranteed becomes burstable", sized("e:v1", res("r:cpu=1", "r:memory=1Gi", "l:cpu=1", "l:memory=1Gi")), sized("e:v1", burstable), false, nil, nil},
		{"best effort becomes burstable", sized("e:v1", corev1.ResourceRequirements{}), sized("e:v1", res("r:cpu=1")), false, nil, nil},
		{"a request removed", sized("e:v1", burstable), sized("e:v1", res("r:cpu=1", "l:cpu=2", "l:memory=2Gi")), false, nil, nil},
		{"a limit removed", sized("e:v1", burstable), sized("e:v1", res("r:cpu=1", "r:memory=1Gi", "l:cpu=2")), false, nil, nil},
		{"ephemeral storage changed", sized("e:v1", res("r:cpu=1", "r:ephemeral-storage=1Gi")), sized("e:v1", res("r:cpu=1", "r:ephemeral-storage=2Gi")), false, nil, nil},
		{"a GPU added", sized("e:v1", burstable), sized("e:v1", res("r:cpu=1", "r:memory=1Gi", "l:cpu=2", "l:memory=2Gi", "l:nvidia.com/gpu=1")), false, nil, nil},
		{"a resize policy changed", sized("e:v1", burstable), withPolicy, false, nil, nil},
		{"pod level resources", podLevel, podLevelTo, false, nil, nil},
		{"an init container resized", initFrom, initTo, false, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.from.DeepCopy()
			ch, ok := inPlaceChanges(tc.from, tc.to)
			if ok != tc.inPlace {
				t.Fatalf("in place %v, want %v", ok, tc.inPlace)
			}
			if !equality.Semantic.DeepEqual(before, &tc.from) {
				t.Error("from modified")
			}
			if !ok {
				return
			}
			var gotRes, gotImg []string
			for name, r := range ch.resources {
				gotRes = append(gotRes, name)
				if !equality.Semantic.DeepEqual(r, tc.to.Spec.Containers[0].Resources) {
					t.Errorf("resources of %s: %v, want %v", name, r, tc.to.Spec.Containers[0].Resources)
				}
			}
			for name := range ch.images {
				gotImg = append(gotImg, name)
			}
			if diff := cmp.Diff(tc.resources, gotRes); diff != "" {
				t.Errorf("resized (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.images, gotImg); diff != "" {
				t.Errorf("new images (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInPlaceChangesApplied: whenever a change is in place, applying it to the
// old template (images, resources) gives the new one; a template moves to
// itself with no change.
func TestInPlaceChangesApplied(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		quantity := rapid.SampledFrom([]string{"100m", "1", "2", "512Mi", "1Gi", "0"})
		names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
		list := func(label string) corev1.ResourceList {
			l := corev1.ResourceList{}
			for _, n := range names {
				if rapid.Bool().Draw(t, label+" has "+string(n)) {
					l[n] = resource.MustParse(quantity.Draw(t, label+" "+string(n)))
				}
			}
			if len(l) == 0 {
				return nil
			}
			return l
		}
		tmpl := func(label string) corev1.PodTemplateSpec {
			t1 := template(rapid.SampledFrom([]string{"e:v1", "e:v2"}).Draw(t, label+" image"), "p:v1")
			t1.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: list(label + " requests"), Limits: list(label + " limits")}
			return t1
		}
		from, to := tmpl("from"), tmpl("to")
		if ch, ok := inPlaceChanges(from, from); !ok || len(ch.images)+len(ch.resources) != 0 {
			t.Fatalf("a template to itself: %v, %+v", ok, ch)
		}
		ch, ok := inPlaceChanges(from, to)
		if !ok {
			return
		}
		got := from.DeepCopy()
		for i := range got.Spec.Containers {
			c := &got.Spec.Containers[i]
			if img, ok := ch.images[c.Name]; ok {
				c.Image = img
			}
			if r, ok := ch.resources[c.Name]; ok {
				c.Resources = r
			}
		}
		if !equality.Semantic.DeepEqual(*got, to) {
			t.Fatalf("from with the change applied differs from to:\n%s", cmp.Diff(to, *got))
		}
		if len(ch.resources) > 0 && qosClass(from.Spec) != qosClass(to.Spec) {
			t.Fatalf("a resize changes the QoS class %s -> %s", qosClass(from.Spec), qosClass(to.Spec))
		}
	})
}

// TestQOSClass: the classes Kubernetes gives, requests defaulted from limits.
func TestQOSClass(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    corev1.ResourceRequirements
		want corev1.PodQOSClass
	}{
		{"nothing", corev1.ResourceRequirements{}, corev1.PodQOSBestEffort},
		{"only other resources", res("r:ephemeral-storage=1Gi"), corev1.PodQOSBestEffort},
		{"limits only (requests defaulted to them)", res("l:cpu=1", "l:memory=1Gi"), corev1.PodQOSGuaranteed},
		{"requests equal to limits", res("r:cpu=1", "r:memory=1Gi", "l:cpu=1000m", "l:memory=1Gi"), corev1.PodQOSGuaranteed},
		{"requests below limits", res("r:cpu=1", "r:memory=1Gi", "l:cpu=2", "l:memory=1Gi"), corev1.PodQOSBurstable},
		{"a cpu limit only", res("l:cpu=1"), corev1.PodQOSBurstable},
		{"a request only", res("r:memory=1Gi"), corev1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := qosClass(sized("e:v1", tc.r).Spec); got != tc.want {
				t.Errorf("QoS %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("one container without limits makes a pod burstable", func(t *testing.T) {
		spec := template("e:v1", "p:v1").Spec // the proxy has no limits
		spec.Containers[0].Resources = res("l:cpu=1", "l:memory=1Gi")
		if got := qosClass(spec); got != corev1.PodQOSBurstable {
			t.Errorf("QoS %s, want Burstable", got)
		}
	})
}

// resizingPod is a pod whose engine was resized to r by an in-place update to
// revision r2, reporting status resources (applied) and allocated requests.
func resizingPod(spec, applied corev1.ResourceRequirements, allocated corev1.ResourceList, ready bool, conds ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{servingv1.LabelRevision: "r2"},
			Annotations: map[string]string{servingv1.AnnotationInPlaceUpdate: `{"revision":"r2","imageIDs":{},"resized":["engine"]}`}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "e:v1", Resources: spec}}},
		Status: corev1.PodStatus{Conditions: conds, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "engine", Image: "e:v1", Ready: ready, Resources: &applied, AllocatedResources: allocated}}},
	}
}

// TestResizedWaitsForTheNode: an in-place resize is done when the node reports
// no resize condition, the resized containers' status resources and
// allocatedResources equal to the spec, and the containers ready.
func TestResizedWaitsForTheNode(t *testing.T) {
	oldR, newR := res("r:cpu=1", "l:cpu=2"), res("r:cpu=2", "l:cpu=4")
	inProgress := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}
	infeasible := corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"not seen by the node yet", resizingPod(newR, oldR, oldR.Requests, true), false},
		{"allocated, in progress", resizingPod(newR, oldR, newR.Requests, true, inProgress), false},
		{"applied, the condition still there", resizingPod(newR, newR, newR.Requests, true, inProgress), false},
		{"infeasible", resizingPod(newR, oldR, oldR.Requests, true, infeasible), false},
		{"applied, restarting", resizingPod(newR, newR, newR.Requests, false), false},
		{"applied and ready", resizingPod(newR, newR, newR.Requests, true), true},
		{"applied, quantities spelled otherwise", resizingPod(newR, res("r:cpu=2000m", "l:cpu=4"), res("r:cpu=2000m").Requests, true), true},
		{"no status resources", func() *corev1.Pod {
			p := resizingPod(newR, newR, newR.Requests, true)
			p.Status.ContainerStatuses[0].Resources = nil
			return p
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := inPlaceRecord(tc.pod)
			if rec == nil {
				t.Fatal("no record")
			}
			if got := resized(tc.pod, rec); got != tc.want {
				t.Errorf("resized %v, want %v", got, tc.want)
			}
			if got := updating(tc.pod); got == tc.want {
				t.Errorf("updating %v, want %v", got, !tc.want)
			}
		})
	}
}

// TestResizeBlocked: a resize the node reports Infeasible is blocked at once;
// a Deferred one after deferredResizeTimeout, and until then says how long is
// left; nothing else blocks.
func TestResizeBlocked(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	r := res("r:cpu=1")
	pending := func(reason string, since time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(now.Add(-since))}
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		blocked bool
		wait    time.Duration
	}{
		{"infeasible", resizingPod(r, r, nil, true, pending(corev1.PodReasonInfeasible, 0)), true, 0},
		{"deferred a minute", resizingPod(r, r, nil, true, pending(corev1.PodReasonDeferred, time.Minute)), false, deferredResizeTimeout - time.Minute},
		{"deferred too long", resizingPod(r, r, nil, true, pending(corev1.PodReasonDeferred, deferredResizeTimeout)), true, 0},
		{"in progress", resizingPod(r, r, nil, true, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}), false, 0},
		{"infeasible, but the record is of another revision", func() *corev1.Pod {
			p := resizingPod(r, r, nil, true, pending(corev1.PodReasonInfeasible, 0))
			p.Labels[servingv1.LabelRevision] = "r3"
			return p
		}(), false, 0},
		{"infeasible, the pod terminating", func() *corev1.Pod {
			p := resizingPod(r, r, nil, true, pending(corev1.PodReasonInfeasible, 0))
			p.DeletionTimestamp = &metav1.Time{Time: now}
			return p
		}(), false, 0},
		{"infeasible, but the update resized nothing", func() *corev1.Pod {
			p := resizingPod(r, r, nil, true, pending(corev1.PodReasonInfeasible, 0))
			p.Annotations[servingv1.AnnotationInPlaceUpdate] = `{"revision":"r2","imageIDs":{"engine":""}}`
			return p
		}(), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocked, _, wait := ResizeBlocked(tc.pod, now)
			if blocked != tc.blocked || wait != tc.wait {
				t.Errorf("blocked %v, wait %v; want %v, %v", blocked, wait, tc.blocked, tc.wait)
			}
		})
	}
}

// TestWithDefaultRequests: a resize names the requests the API server gave the
// pod (defaulted from its limits), and leaves its argument alone.
func TestWithDefaultRequests(t *testing.T) {
	in := res("r:memory=1Gi", "l:cpu=2", "l:memory=2Gi")
	got := withDefaultRequests(in)
	if want := res("r:cpu=2", "r:memory=1Gi", "l:cpu=2", "l:memory=2Gi"); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, ok := in.Requests[corev1.ResourceCPU]; ok {
		t.Error("the argument was modified")
	}
}
