package webhookpatch

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	pf "github.com/kplan-dev/kplan/internal/podfixture"
)

func TestDiffOperations(t *testing.T) {
	base := func() *corev1.Pod {
		return pf.Pod("ns", "p", pf.Containers("a", "b"), pf.Annotation("keep", "1"),
			pf.Volume(corev1.Volume{Name: "v1"}))
	}
	cases := []struct {
		name string
		edit func(p *corev1.Pod)
		want []string // operations as JSON, in order
	}{
		{"no change gives no operations", func(p *corev1.Pod) {}, nil},
		{
			"an appended container is one add to /-",
			func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c"}) },
			[]string{`{"op":"add","path":"/spec/containers/-","value":{"name":"c","resources":{}}}`},
		},
		{
			"a prepended container is one add at 0, not a cascade of replaces",
			func(p *corev1.Pod) {
				p.Spec.Containers = append([]corev1.Container{{Name: "z"}}, p.Spec.Containers...)
			},
			[]string{`{"op":"add","path":"/spec/containers/0","value":{"name":"z","resources":{}}}`},
		},
		{
			"an annotation key with a slash is escaped",
			func(p *corev1.Pod) { p.Annotations["example.com/role"] = "x" },
			[]string{`{"op":"add","path":"/metadata/annotations/example.com~1role","value":"x"}`},
		},
		{
			"a tilde is escaped before a slash",
			func(p *corev1.Pod) { p.Annotations["a~/b"] = "x" },
			[]string{`{"op":"add","path":"/metadata/annotations/a~0~1b","value":"x"}`},
		},
		{
			"a missing map is added whole",
			func(p *corev1.Pod) { p.Labels = map[string]string{"app": "qwen"} },
			[]string{`{"op":"add","path":"/metadata/labels","value":{"app":"qwen"}}`},
		},
		{
			"a missing list is added whole",
			func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "i"}} },
			[]string{`{"op":"add","path":"/spec/initContainers","value":[{"name":"i","resources":{}}]}`},
		},
		{
			"a removed middle container is one remove",
			func(p *corev1.Pod) { p.Spec.Containers = p.Spec.Containers[1:] },
			[]string{`{"op":"remove","path":"/spec/containers/0"}`},
		},
		{
			"map keys come sorted",
			func(p *corev1.Pod) { p.Annotations["b"], p.Annotations["a"], p.Annotations["c"] = "2", "1", "3" },
			[]string{
				`{"op":"add","path":"/metadata/annotations/a","value":"1"}`,
				`{"op":"add","path":"/metadata/annotations/b","value":"2"}`,
				`{"op":"add","path":"/metadata/annotations/c","value":"3"}`,
			},
		},
		{
			"a changed field deep inside is one replace",
			func(p *corev1.Pod) { p.Spec.Containers[1].Image = "new" },
			[]string{`{"op":"replace","path":"/spec/containers/1/image","value":"new"}`},
		},
		{
			"reordered containers replace the list",
			func(p *corev1.Pod) {
				p.Spec.Containers[0], p.Spec.Containers[1] = p.Spec.Containers[1], p.Spec.Containers[0]
			},
			[]string{`{"op":"replace","path":"/spec/containers","value":[{"name":"b","image":"busybox","resources":{}},{"name":"a","image":"busybox","resources":{}}]}`},
		},
		{
			"an inserted finalizer is one add",
			func(p *corev1.Pod) { p.Finalizers = []string{"x.io/f"} },
			[]string{`{"op":"add","path":"/metadata/finalizers","value":["x.io/f"]}`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := base()
			after := before.DeepCopy()
			c.edit(after)
			ops := applyDiff(t, before, after)
			var got []string
			for _, o := range ops {
				got = append(got, o.String())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("operations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestDiffNeedsTwoPods(t *testing.T) {
	if _, err := Diff(nil, &corev1.Pod{}); err == nil {
		t.Fatal("want an error for a nil pod")
	}
}

func TestPatch(t *testing.T) {
	b, pt, err := Patch(nil)
	if b != nil || pt != nil || err != nil {
		t.Fatalf("no operations must give no patch and no type, got %q %v %v", b, pt, err)
	}
	b, pt, err = Patch([]Operation{{Op: "remove", Path: "/a"}, {Op: "add", Path: "/b", Value: []byte("null")}})
	if err != nil || pt == nil || string(*pt) != "JSONPatch" || string(b) != `[{"op":"remove","path":"/a"},{"op":"add","path":"/b","value":null}]` {
		t.Fatalf("Patch = %s %v %v", b, pt, err)
	}
	if _, _, err := Patch([]Operation{{Op: "add", Path: "/b"}}); err == nil {
		t.Fatal("an add without a value must be an error")
	}
}
