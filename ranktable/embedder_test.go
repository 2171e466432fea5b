package ranktable

import (
	"github.com/kplan-dev/kplan"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What an embedder needs besides Plan: an Owner from its own object, the level a
// webhook names ConfigMaps by, and which parser ConfigMap to fetch.

func TestNewOwnerCopiesWhatPlanReads(t *testing.T) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{
		Name: "qwen", Namespace: "default", UID: "sts-uid", ResourceVersion: "7",
		Labels: map[string]string{"app": "qwen"}, Annotations: map[string]string{AnnotationLevel: "group"},
	}}
	gvk := appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	got := NewOwner(sts, gvk)
	want := Owner{GVK: gvk, ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "default", UID: "sts-uid",
		Annotations: map[string]string{AnnotationLevel: "group"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("NewOwner (-want +got):\n%s", diff)
	}
	got.Annotations["x"] = "y"
	if _, ok := sts.Annotations["x"]; ok {
		t.Error("the Owner shares the object's annotations map")
	}
	var nilSts *appsv1.StatefulSet
	if diff := cmp.Diff(Owner{GVK: gvk}, NewOwner(nilSts, gvk)); diff != "" {
		t.Errorf("NewOwner(nil) (-want +got):\n%s", diff)
	}
}

func TestResolveLevel(t *testing.T) {
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{}) // role level
	owner := func(ann map[string]string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "default", Annotations: ann}}
	}
	cases := []struct {
		name    string
		owner   metav1.Object
		t       *Template
		want    Level
		wantErr string
	}{
		{"without the annotation the template's level", owner(nil), tm, LevelRole, ""},
		{"the owner's annotation wins", owner(map[string]string{AnnotationLevel: "group"}), tm, LevelGroup, ""},
		{"an annotation naming no level is an error", owner(map[string]string{AnnotationLevel: "node"}), tm, "",
			`owner default/qwen: annotation kthena.io/ranktable-level: "node" is not a ranktable level (want role or group)`},
		{"a nil owner is an error", (*appsv1.StatefulSet)(nil), tm, "", "owner is nil"},
		{"a nil template is an error", owner(nil), nil, "", "template is nil"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ResolveLevel(c.owner, c.t)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("ResolveLevel = %q, %v; want the error %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ResolveLevel = %q, %v; want %q", got, err, c.want)
			}
		})
	}
	// Plan groups at the level ResolveLevel returns.
	o := testOwner("ms")
	o.Annotations = map[string]string{AnnotationLevel: "group"}
	res, err := Plan(Input{Owner: o, Template: tm, Now: t0})
	if err != nil || res.Level != LevelGroup {
		t.Errorf("Plan level %q, %v; want group", res.Level, err)
	}
}

func TestParserConfigMapName(t *testing.T) {
	cm := func(parser string) *corev1.ConfigMap {
		return &corev1.ConfigMap{Data: map[string]string{KeyPodParserTemplate: parser}}
	}
	cases := []struct {
		name string
		rt   *corev1.ConfigMap
		want string
	}{
		{"a parser ConfigMap", cm(LibraryParserStandard), LibraryParserStandard},
		{"the default built-in parser", cm(""), ""},
		{"a built-in parser", cm(BuiltinAscendDevicePlugin), ""},
		{"an unknown built-in parser (LoadTemplate reports it)", cm("builtin:other"), ""},
		{"no ConfigMap", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ParserConfigMapName(c.rt); got != c.want {
				t.Fatalf("ParserConfigMapName = %q, want %q", got, c.want)
			}
		})
	}
	// What ParserConfigMapName names is what LoadTemplate needs.
	rt, _ := LibraryConfigMap(LibraryMindIERole)
	parser, _ := LibraryConfigMap(ParserConfigMapName(rt))
	if _, err := LoadTemplate(rt, parser, LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTemplate(rt, nil, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "not given") {
		t.Fatalf("LoadTemplate without the parser ConfigMap: %v", err)
	}
}

// Every event names its object with a full reference: kind, API version, namespace,
// name, and the UID of objects that exist.
func TestEventsReferToTheirObjects(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	kA, kB := GroupKey{"ms-0", "worker-0"}, GroupKey{"ms-1", "worker-0"}
	missing := kthenaPod(o, 1, "worker-0", 1, false, 8)
	pods := []*corev1.Pod{kthenaPod(o, 0, "worker-0", 0, true, 8), kthenaPod(o, 0, "worker-0", 1, true, 8),
		kthenaPod(o, 1, "worker-0", 0, true, 8), missing}
	existing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ms-0-worker-0-ranktable", Namespace: "default", UID: "cm-uid",
		OwnerReferences: []metav1.OwnerReference{ownerRef(o)}}}
	res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, ConfigMaps: []*corev1.ConfigMap{existing},
		Expected: map[GroupKey]int{kA: 2, kB: 2, {"ms-2", "worker-0"}: 0}, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		Reason kplan.Reason
		Object corev1.ObjectReference
	}
	var got []ev
	for _, e := range res.Events {
		got = append(got, ev{e.Reason, e.Object})
	}
	want := []ev{
		{ReasonGenerated, corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "ms-0-worker-0-ranktable", UID: "cm-uid"}},
		{ReasonAnnotationMissing, corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: missing.Name, UID: missing.UID}},
		{ReasonConfigMapCreated, corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "ms-1-worker-0-ranktable"}},
		{ReasonConfigMapCreated, corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "ms-2-worker-0-ranktable"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// A failed group's event is on the owner.
	bad := kthenaPod(o, 0, "worker-0", 1, true, 8)
	bad.Annotations[DefaultAnnotationName] = "{"
	res, _ = Plan(Input{Owner: o, Template: tm, Pods: []*corev1.Pod{bad}, Now: t0})
	wantOwner := corev1.ObjectReference{APIVersion: o.GVK.GroupVersion().String(), Kind: o.GVK.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID}
	var failed []corev1.ObjectReference
	for _, e := range res.Events {
		if e.Reason == ReasonGenerationFailed {
			failed = append(failed, e.Object)
		}
	}
	if diff := cmp.Diff([]corev1.ObjectReference{wantOwner}, failed); diff != "" {
		t.Errorf("objects of %s events (-want +got):\n%s", ReasonGenerationFailed, diff)
	}
}

// metaValue is a metav1.Object that is not a pointer: NewOwner and ResolveLevel must
// not treat it as a nil pointer (reflect's IsNil panics on a struct).
type metaValue struct{ *metav1.ObjectMeta }

func TestOwnerOfANonPointerObject(t *testing.T) {
	obj := metaValue{&metav1.ObjectMeta{Name: "qwen", Namespace: "default",
		Annotations: map[string]string{AnnotationLevel: strings.Repeat("x", 100_000)}}}
	if got := NewOwner(obj, appsv1.SchemeGroupVersion.WithKind("StatefulSet")); got.Name != "qwen" {
		t.Errorf("NewOwner of a non-pointer object: %+v", got.ObjectMeta)
	}
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	_, err := ResolveLevel(obj, tm)
	if err == nil {
		t.Fatal("a level of 100,000 x's was accepted")
	}
	if len(err.Error()) > 300 {
		t.Errorf("the error repeats the whole annotation (%d bytes)", len(err.Error()))
	}
}
