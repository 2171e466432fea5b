package operator

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

func template(images ...string) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "llm"}}}
	for i, img := range images {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: []string{"engine", "proxy", "extra"}[i], Image: img})
	}
	return t
}

// TestImageChangesOnlyWhenNothingElseDiffers: a template change moves a pod in
// place only when it changes containers' images and nothing else.
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
			got, ok := imageChanges(from, tc.to)
			if ok != tc.inPlace {
				t.Fatalf("in place %v, want %v", ok, tc.inPlace)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
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

// TestExpectationsWaitForInPlaceUpdates: a pod updated in place is expected
// until the cache shows it with the new revision label, or without it.
func TestExpectationsWaitForInPlaceUpdates(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	e := newExpectations(time.Minute)
	owner := types.UID("ms")
	pod := func(rev string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p", Labels: map[string]string{servingv1.LabelRevision: rev}}}
	}
	e.updated(owner, "p", "r2", now)
	if e.satisfied(owner, []*corev1.Pod{pod("r1")}, now) {
		t.Error("satisfied while the cache shows the old revision")
	}
	if !e.satisfied(owner, []*corev1.Pod{pod("r2")}, now) {
		t.Error("not satisfied once the cache shows the new revision")
	}
	e.updated(owner, "p", "r3", now)
	if !e.satisfied(owner, nil, now) {
		t.Error("not satisfied once the pod is gone")
	}
	e.updated(owner, "p", "r4", now)
	if !e.satisfied(owner, []*corev1.Pod{pod("r3")}, now.Add(2*time.Minute)) {
		t.Error("an expectation outlived its timeout")
	}
}
