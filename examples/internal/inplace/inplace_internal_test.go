package inplace

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/kube"
)

func template(images ...string) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "llm"}}}
	for i, img := range images {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: []string{"engine", "proxy", "extra"}[i], Image: img})
	}
	return t
}

// TestImageChangesOnlyWhenNothingElseDiffers: a template change moves a pod in
// place only when it changes containers' images and nothing else (resources:
// TestInPlaceChangesResize).
func TestImageChangesOnlyWhenNothingElseDiffers(t *testing.T) {
	withEnv := template("e:v2", "p:v1")
	withEnv.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	withLabel := template("e:v2", "p:v1")
	withLabel.Labels["tier"] = "gold"
	renamed := template("e:v2", "p:v1")
	renamed.Spec.Containers[1].Name = "sidecar"
	for _, tc := range []struct {
		name    string
		to      corev1.PodTemplateSpec
		want    map[string]string
		inPlace bool
	}{
		{"one image", template("e:v2", "p:v1"), map[string]string{"engine": "e:v2"}, true},
		{"both images", template("e:v2", "p:v2"), map[string]string{"engine": "e:v2", "proxy": "p:v2"}, true},
		{"nothing", template("e:v1", "p:v1"), map[string]string{}, true},
		{"an image and an env var", withEnv, nil, false},
		{"an image and a label", withLabel, nil, false},
		{"a container renamed", renamed, nil, false},
		{"a container added", template("e:v2", "p:v1", "x"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := template("e:v1", "p:v1")
			ch, ok := inPlaceChanges(from, tc.to)
			if ok != tc.inPlace {
				t.Fatalf("in place %v, want %v", ok, tc.inPlace)
			}
			if ok && len(ch.resources) != 0 {
				t.Errorf("resources changed: %v", ch.resources)
			}
			if diff := cmp.Diff(tc.want, ch.images); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(template("e:v1", "p:v1"), from); diff != "" {
				t.Errorf("from modified:\n%s", diff)
			}
		})
	}
}

// TestImagesUpdatedWaitsForTheNewImage: an in-place update is done when every
// changed container reports the new image or another image ID than before, and
// is ready.
func TestImagesUpdatedWaitsForTheNewImage(t *testing.T) {
	rec := &inPlaceUpdateRecord{Revision: "r2", ImageIDs: map[string]string{"engine": "sha256:old"}}
	pod := func(image, id string, ready bool) *corev1.Pod {
		return &corev1.Pod{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "e:v2"}, {Name: "proxy", Image: "p:v1"}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				{Name: "engine", Image: image, ImageID: id, Ready: ready},
				{Name: "proxy", Image: "p:v1", ImageID: "sha256:p", Ready: false}, // unchanged: not waited for
			}},
		}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"still the old image", pod("e:v1", "sha256:old", true), false},
		{"the new image, not ready", pod("e:v2", "sha256:new", false), false},
		{"the new image, ready", pod("e:v2", "sha256:new", true), true},
		{"the image under another name, a new ID", pod("docker.io/library/e:v2", "sha256:new", true), true},
		{"the image under another name, the old ID", pod("docker.io/library/e:v1", "sha256:old", true), false},
		{"no status for the container", &corev1.Pod{Spec: pod("", "", false).Spec}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := imagesUpdated(tc.pod, rec); got != tc.want {
				t.Errorf("imagesUpdated %v, want %v", got, tc.want)
			}
		})
	}
}

// podName is the name the ModelServing controller gives member m of role decode in
// serving group g of ModelServing llm.
func podName(g, m int) string { return fmt.Sprintf("llm-decode-%d-%d", g, m) }

// gangMember is member m of serving group g at revision rev with its readiness
// gate set to gate ("" for no condition yet); record marks an in-place update to
// rev whose containers have not restarted yet.
func gangMember(g, m int, rev string, gate corev1.ConditionStatus, record bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: podName(g, m), UID: types.UID(podName(g, m)),
			Labels: map[string]string{servingv1.LabelGroupName: (&servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "llm"}}).GroupName(g), servingv1.LabelRevision: rev}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "e:" + rev}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: servingv1.PodConditionImagesReady}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "engine", Image: "e:v1", ImageID: "id-v1", Ready: true}}},
	}
	if gate != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: servingv1.PodConditionImagesReady, Status: gate}}
	}
	if record {
		p.Annotations = map[string]string{servingv1.AnnotationInPlaceUpdate: `{"revision":"` + rev + `","imageIDs":{"engine":"id-v1"}}`}
	}
	return p
}

// TestReleaseGatesNeverOpensAMixedGang: the states a process can die in while
// updating a serving group in place (gates closed, some members patched, the
// rest not), and which gates the next process opens. In Gang mode a group's
// gates open only when its members run one revision and none still restarts;
// in the other modes each pod is its own replica.
func TestReleaseGatesNeverOpensAMixedGang(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode servingv1.RolloutMode
		pods []*corev1.Pod
		want []string // pods whose gate is opened
	}{
		{"gang: died after closing every gate, before any patch", servingv1.GangMode,
			[]*corev1.Pod{gangMember(0, 0, "v1", corev1.ConditionFalse, false), gangMember(0, 1, "v1", corev1.ConditionFalse, false)},
			[]string{"llm-decode-0-0", "llm-decode-0-1"}},
		{"gang: died after patching the first member", servingv1.GangMode,
			[]*corev1.Pod{gangMember(0, 0, "v2", corev1.ConditionFalse, true), gangMember(0, 1, "v1", corev1.ConditionFalse, false)},
			nil},
		{"gang: the patched member restarted, the other not patched", servingv1.GangMode,
			[]*corev1.Pod{func() *corev1.Pod {
				p := gangMember(0, 0, "v2", corev1.ConditionFalse, true)
				p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "engine", Image: "e:v2", ImageID: "id-v2", Ready: true}
				return p
			}(), gangMember(0, 1, "v1", corev1.ConditionFalse, false)},
			nil},
		{"gang: every member patched, one still restarting", servingv1.GangMode,
			[]*corev1.Pod{func() *corev1.Pod {
				p := gangMember(0, 0, "v2", corev1.ConditionFalse, true)
				p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "engine", Image: "e:v2", ImageID: "id-v2", Ready: true}
				return p
			}(), gangMember(0, 1, "v2", corev1.ConditionFalse, true)},
			nil},
		{"gang: another group is unaffected", servingv1.GangMode,
			[]*corev1.Pod{gangMember(0, 0, "v2", corev1.ConditionFalse, true), gangMember(0, 1, "v1", corev1.ConditionFalse, false),
				gangMember(1, 0, "v1", "", false), gangMember(1, 1, "v1", "", false)},
			[]string{"llm-decode-1-0", "llm-decode-1-1"}},
		{"rolling: the unpatched pod serves its old images again", servingv1.RollingMode,
			[]*corev1.Pod{gangMember(0, 0, "v2", corev1.ConditionFalse, true), gangMember(0, 1, "v1", corev1.ConditionFalse, false)},
			[]string{"llm-decode-0-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []client.Object
			var observed []*corev1.Pod // the reconciler's copies: writes update them
			for _, p := range tc.pods {
				objs = append(objs, p.DeepCopy())
				observed = append(observed, p.DeepCopy())
			}
			c := fake.NewClientBuilder().WithObjects(objs...).WithStatusSubresource(&corev1.Pod{}).Build()
			if _, err := ReleaseGates(t.Context(), c, tc.mode, observed, time.Unix(1000, 0)); err != nil {
				t.Fatal(err)
			}
			var opened []string
			for _, p := range tc.pods {
				var got corev1.Pod
				if err := c.Get(t.Context(), client.ObjectKeyFromObject(p), &got); err != nil {
					t.Fatal(err)
				}
				before := kube.PodCondition(p, servingv1.PodConditionImagesReady)
				after := kube.PodCondition(&got, servingv1.PodConditionImagesReady)
				if after != nil && after.Status == corev1.ConditionTrue && (before == nil || before.Status != corev1.ConditionTrue) {
					opened = append(opened, p.Name)
				}
			}
			if diff := cmp.Diff(tc.want, opened); diff != "" {
				t.Errorf("gates opened (-want +got):\n%s", diff)
			}
		})
	}
}
