package webhookpatch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/exact"
	"github.com/kplan-dev/kplan/internal/podfixture"
)

func TestApply(t *testing.T) {
	in := Injector{Name: "cfg"}
	other := Injector{Name: "other"}
	emptyDir := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	fromCM := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}
	side := corev1.Container{Name: "side", Image: "side:1"}
	mount := corev1.VolumeMount{Name: "data", MountPath: "/data"}
	errBoom := errors.New("boom")

	// A pod this injector already injected emptyDir, side and its annotation into.
	injectedPod := func() *corev1.Pod {
		p := podfixture.Pod("ns", "p", podfixture.Containers("main"))
		must(t, func() (bool, error) { return in.EnsureVolume(p, emptyDir) })
		must(t, func() (bool, error) { return in.EnsureSidecar(p, side, SidecarNative) })
		must(t, func() (bool, error) { return in.EnsureAnnotation(p, "example.com/cfg", "v1") })
		return p
	}
	fresh := func() *corev1.Pod { return podfixture.Pod("ns", "p", podfixture.Containers("main")) }

	tests := []struct {
		name      string
		pod       func() *corev1.Pod
		inject    func(*corev1.Pod) error
		wantErr   string // "" for success
		conflict  bool   // the error wraps ErrConflict
		changed   bool
		items     []string
		unchanged bool // the pod must be exactly as before (always checked on error)
	}{
		{
			name: "every Ensure takes effect when inject succeeds",
			pod:  fresh,
			inject: func(p *corev1.Pod) error {
				return errors.Join(ignore(in.EnsureVolume(p, emptyDir)), ignore(in.EnsureSidecar(p, side, SidecarNative)),
					ignore(in.EnsureVolumeMount(p, mount, ContainerSelector{Names: []string{"main"}})), ignore(in.EnsureAnnotation(p, "example.com/cfg", "v1")))
			},
			changed: true,
			items:   []string{"annotation/example.com/cfg", "initContainer/side", "mount/main//data", "volume/data"},
		},
		{
			name: "a conflict in the last Ensure leaves the pod as it was",
			pod: func() *corev1.Pod {
				p := fresh()
				p.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				return p
			},
			inject: func(p *corev1.Pod) error {
				if _, err := in.EnsureVolume(p, emptyDir); err != nil {
					return err
				}
				if _, err := in.EnsureSidecar(p, side, SidecarNative); err != nil {
					return err
				}
				cache := fromCM
				cache.Name = "cache" // the user's emptyDir "cache" differs
				_, err := in.EnsureVolume(p, cache)
				return err
			},
			wantErr:  "spec.volumes[cache]",
			conflict: true,
		},
		{
			name: "any error of inject rolls back what it did before",
			pod:  fresh,
			inject: func(p *corev1.Pod) error {
				_, _ = in.EnsureVolume(p, emptyDir)
				p.Spec.NodeName = "node-1"
				return errBoom
			},
			wantErr: "boom",
		},
		{
			name:      "injecting again changes nothing and lists nothing",
			pod:       injectedPod,
			inject:    func(p *corev1.Pod) error { _, err := in.EnsureVolume(p, emptyDir); return err },
			unchanged: true,
		},
		{
			name:    "an item injected with other content is listed as changed",
			pod:     injectedPod,
			inject:  func(p *corev1.Pod) error { _, err := in.EnsureVolume(p, fromCM); return err },
			changed: true,
			items:   []string{"volume/data"},
		},
		{
			name:    "stripping lists every item removed",
			pod:     injectedPod,
			inject:  func(p *corev1.Pod) error { _, err := in.Strip(p); return err },
			changed: true,
			items:   []string{"annotation/example.com/cfg", "initContainer/side", "volume/data"},
		},
		{
			name: "items of another injector are not listed",
			pod:  fresh,
			inject: func(p *corev1.Pod) error {
				_, err := other.EnsureVolume(p, emptyDir)
				return err
			},
			changed: true,
		},
		{
			name:    "a direct change is applied and reported without items",
			pod:     fresh,
			inject:  func(p *corev1.Pod) error { p.Spec.NodeName = "node-1"; return nil },
			changed: true,
		},
		{
			name: "a list made empty is no change, and the pod keeps its nil list",
			pod:  fresh,
			inject: func(p *corev1.Pod) error {
				p.Spec.Volumes = []corev1.Volume{}
				return nil
			},
			unchanged: true,
		},
		{
			name:    "a record inject leaves unreadable is an error",
			pod:     fresh,
			inject:  func(p *corev1.Pod) error { p.Annotations = map[string]string{RecordAnnotation: "{"}; return nil },
			wantErr: "annotation " + RecordAnnotation,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod()
			before := pod.DeepCopy()
			res, err := in.Apply(pod, tt.inject)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				if errors.Is(err, ErrConflict) != tt.conflict {
					t.Errorf("errors.Is(err, ErrConflict) = %v, want %v", !tt.conflict, tt.conflict)
				}
				if diff := cmp.Diff(before, pod, exact.Options); diff != "" {
					t.Fatalf("the pod changed on error (-before +after):\n%s", diff)
				}
				if res.Changed || res.Items != nil {
					t.Errorf("result on error %+v, want the zero Result", res)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if res.Changed != tt.changed || !slices.Equal(res.Items, tt.items) {
				t.Errorf("result %+v, want changed=%v items=%q", res, tt.changed, tt.items)
			}
			if tt.unchanged {
				if diff := cmp.Diff(before, pod, exact.Options); diff != "" {
					t.Errorf("the pod changed (-before +after):\n%s", diff)
				}
			}
			// What inject did on a copy of its own is what Apply left in the pod.
			want := before.DeepCopy()
			if err := tt.inject(want); err != nil {
				t.Fatalf("inject on a copy: %v", err)
			}
			if tt.changed {
				if diff := cmp.Diff(want, pod, exact.Options); diff != "" {
					t.Errorf("the pod is not what inject made (-inject +Apply):\n%s", diff)
				}
			}
		})
	}
}

// The arguments Apply refuses, before inject runs.
func TestApplyRefusesBadArguments(t *testing.T) {
	pod := podfixture.Pod("ns", "p", podfixture.Containers("main"))
	unreadable := pod.DeepCopy()
	unreadable.Annotations = map[string]string{RecordAnnotation: "[1]"}
	tests := []struct {
		name   string
		in     Injector
		pod    *corev1.Pod
		inject func(*corev1.Pod) error
		want   string
	}{
		{"a nil pod", Injector{Name: "cfg"}, nil, func(*corev1.Pod) error { return nil }, "nil pod"},
		{"a nil inject function", Injector{Name: "cfg"}, pod, nil, "nil inject function"},
		{"an injector name that is not a DNS-1123 label", Injector{Name: "Cfg_1"}, pod, func(*corev1.Pod) error { return nil }, `injector name "Cfg_1"`},
		{"an unreadable record annotation", Injector{Name: "cfg"}, unreadable, func(*corev1.Pod) error { return nil }, "pod ns/p: annotation " + RecordAnnotation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			inject := tt.inject
			if inject != nil {
				inject = func(p *corev1.Pod) error { called = true; return tt.inject(p) }
			}
			before := tt.pod.DeepCopy()
			_, err := tt.in.Apply(tt.pod, inject)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
			if called {
				t.Error("inject was called")
			}
			if diff := cmp.Diff(before, tt.pod, exact.Options); diff != "" {
				t.Errorf("the pod changed (-before +after):\n%s", diff)
			}
		})
	}
}

// For any pod and any sequence of primitives, some failing half-way: on error the pod
// is exactly the input; on success it is what the primitives make of a copy, Changed
// says whether that encodes differently, and Items lists exactly the items whose
// recorded hash under the injector differs (read from the annotation's JSON here, not
// with the package's record code).
func TestApplyIsAllOrNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pod := genPod(t)
		for i, n := 0, rapid.IntRange(0, 4).Draw(t, "setup"); i < n; i++ {
			_, _ = genPrimitive(t, "setup").apply(pod)
		}
		in := Injector{Name: rapid.SampledFrom([]string{"ranktable", "configmapset-x"}).Draw(t, "injector")}
		var steps []primitive
		for i, n := 0, rapid.IntRange(0, 6).Draw(t, "steps"); i < n; i++ {
			steps = append(steps, genPrimitive(t, "step"))
		}
		failAt := rapid.IntRange(-1, len(steps)).Draw(t, "failAt") // -1: no forced failure
		errForced := errors.New("forced")
		inject := func(p *corev1.Pod) error {
			for i, s := range steps {
				if i == failAt {
					return errForced
				}
				if _, err := s.apply(p); err != nil {
					return err
				}
			}
			if failAt == len(steps) {
				return errForced
			}
			return nil
		}

		before := pod.DeepCopy()
		want := pod.DeepCopy()
		wantErr := inject(want)
		res, err := in.Apply(pod, inject)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("Apply err = %v, the steps on a copy: %v", err, wantErr)
		}
		if err != nil {
			if diff := cmp.Diff(before, pod, exact.Options); diff != "" {
				t.Fatalf("Apply failed (%v) but changed the pod (-before +after):\n%s", err, diff)
			}
			if res.Changed || res.Items != nil {
				t.Fatalf("result on error %+v", res)
			}
			return
		}
		changed := !equality.Semantic.DeepEqual(before, want)
		if res.Changed != changed {
			t.Fatalf("Changed = %v, the pods differ: %v", res.Changed, changed)
		}
		if changed {
			if diff := cmp.Diff(want, pod, exact.Options); diff != "" {
				t.Fatalf("the pod is not what the steps make (-steps +Apply):\n%s", diff)
			}
		} else if diff := cmp.Diff(before, pod, exact.Options); diff != "" {
			t.Fatalf("unchanged, but the pod was replaced (-before +after):\n%s", diff)
		}
		if wantItems := recordChanges(t, before, want, in.Name); !slices.Equal(res.Items, wantItems) {
			t.Fatalf("Items = %q, the record changed %q", res.Items, wantItems)
		}
		if len(res.Items) > 0 && !res.Changed {
			t.Fatalf("Items %q on an unchanged pod", res.Items)
		}
	})
}

// ignore drops an Ensure call's changed result, keeping its error.
func ignore(_ bool, err error) error { return err }

// recordChanges lists the record items of injector that differ between a and b.
func recordChanges(t *rapid.T, a, b *corev1.Pod, injector string) []string {
	items, err := podfixture.RecordChanges(a, b, RecordAnnotation, injector)
	if err != nil {
		t.Fatalf("record of a generated pod: %v", err)
	}
	return items
}
