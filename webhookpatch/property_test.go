package webhookpatch

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/exact"
)

func TestGeneratedPodsAreValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		if errs := Validate(genPod(t)); len(errs) > 0 {
			t.Fatalf("generator made an invalid pod: %v", errs)
		}
	})
}

// (a) + (d): applying Diff(before, after) to before yields after, and Diff mutates
// neither pod, for any sequence of primitives.
func TestDiffOfPrimitivesAppliesToAfter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		before := genPod(t)
		after := before.DeepCopy()
		for i, n := 0, rapid.IntRange(1, 8).Draw(t, "steps"); i < n; i++ {
			_, _ = genPrimitive(t, "p").apply(after)
		}
		beforeCopy, afterCopy := before.DeepCopy(), after.DeepCopy()
		applyDiff(t, before, after)
		if diff := cmp.Diff(beforeCopy, before, exact.Options); diff != "" {
			t.Fatalf("Diff mutated its first pod (-before +after the call):\n%s", diff)
		}
		if diff := cmp.Diff(afterCopy, after, exact.Options); diff != "" {
			t.Fatalf("Diff mutated its second pod (-before +after the call):\n%s", diff)
		}
	})
}

// (a) for edits no primitive makes: removals, inserts in the middle, reorders, map
// and finalizer changes.
func TestDiffOfArbitraryEditsAppliesToAfter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		before := genPod(t)
		after := before.DeepCopy()
		for i, n := 0, rapid.IntRange(1, 6).Draw(t, "edits"); i < n; i++ {
			rawEdit(t, after)
		}
		applyDiff(t, before, after)
	})
}

func rawEdit(t *rapid.T, p *corev1.Pod) {
	cs := &p.Spec.Containers
	switch rapid.IntRange(0, 9).Draw(t, "edit") {
	case 0:
		if len(*cs) > 1 {
			i := rapid.IntRange(0, len(*cs)-1).Draw(t, "removeAt")
			*cs = slices.Delete(*cs, i, i+1)
		}
	case 1:
		i := rapid.IntRange(0, len(*cs)).Draw(t, "insertAt")
		*cs = slices.Insert(*cs, i, genContainer(t, "new-"+genName.Draw(t, "newName")))
	case 2:
		if len(*cs) > 1 {
			i := rapid.IntRange(1, len(*cs)-1).Draw(t, "swap")
			(*cs)[0], (*cs)[i] = (*cs)[i], (*cs)[0]
		}
	case 3:
		if len(*cs) > 0 {
			c := &(*cs)[rapid.IntRange(0, len(*cs)-1).Draw(t, "envIn")]
			c.Env = append([]corev1.EnvVar{{Name: "FIRST", Value: "1"}}, c.Env...)
			if len(c.Env) > 2 {
				c.Env = slices.Delete(c.Env, 1, 2)
			}
		}
	case 4:
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[genRawKey.Draw(t, "annKey")] = genValue.Draw(t, "annValue")
	case 5:
		for k := range p.Labels {
			delete(p.Labels, k)
			break
		}
	case 6:
		p.Finalizers = append([]string{"z.io/first"}, p.Finalizers...)
	case 7:
		p.Spec.Volumes = nil
		for i := range p.Spec.InitContainers {
			p.Spec.InitContainers[i].VolumeMounts = nil
		}
		for i := range *cs {
			(*cs)[i].VolumeMounts = nil
		}
	case 8:
		if len(*cs) > 0 {
			(*cs)[0].Args = append((*cs)[0].Args, "--tail")
			(*cs)[0].Image = "other"
		}
	default:
		p.Annotations = nil
		p.Spec.NodeName = genValue.Draw(t, "node")
	}
}

// (b): applying any primitive twice equals applying it once; a primitive that fails
// leaves the pod unchanged.
func TestPrimitivesAreIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pod := genPod(t)
		for i, n := 0, rapid.IntRange(0, 4).Draw(t, "setup"); i < n; i++ {
			_, _ = genPrimitive(t, "setup").apply(pod)
		}
		p := genPrimitive(t, "p")
		before := pod.DeepCopy()
		if _, err := p.apply(pod); err != nil {
			if diff := cmp.Diff(before, pod, exact.Options); diff != "" {
				t.Fatalf("%s failed (%v) but changed the pod (-before +after):\n%s", p.desc, err, diff)
			}
			return
		}
		once := pod.DeepCopy()
		changed, err := p.apply(pod)
		if err != nil || changed {
			t.Fatalf("%s second call: changed=%v err=%v", p.desc, changed, err)
		}
		if diff := cmp.Diff(once, pod, exact.Options); diff != "" {
			t.Fatalf("%s second call changed the pod (-once +twice):\n%s", p.desc, diff)
		}
		if ops, _ := Diff(once, pod); len(ops) != 0 {
			t.Fatalf("%s second call: Diff has %d operations", p.desc, len(ops))
		}
	})
}

// (c): every primitive's result passes Validate.
func TestPrimitiveResultsPassValidate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pod := genPod(t)
		for i, n := 0, rapid.IntRange(1, 8).Draw(t, "steps"); i < n; i++ {
			p := genPrimitive(t, "p")
			_, err := p.apply(pod)
			if err != nil && !errors.Is(err, ErrConflict) && !isInputError(err) {
				t.Fatalf("%s: unexpected error %v", p.desc, err)
			}
			if errs := Validate(pod); len(errs) > 0 {
				t.Fatalf("after %s: %v", p.desc, errs)
			}
		}
	})
}

// isInputError recognises the non-conflict errors a generated call can hit: a mount
// of a volume the pod lacks, a selector naming a missing container, or a Strip that
// would leave another injector's mount without its volume.
func isInputError(err error) bool {
	msg := err.Error()
	return containsAny(msg, "has no volume", "no such container", "used by an init and an app container",
		"which the injector does not own")
}

// Strip after injecting from scratch gives back the pod's original JSON, so a webhook
// can strip and re-inject to the same pod.
func TestStripRestoresThePod(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		orig := genPod(t)
		pod := orig.DeepCopy()
		in := Injector{Name: "ranktable"}
		for i, n := 0, rapid.IntRange(1, 6).Draw(t, "steps"); i < n; i++ {
			p := genPrimitiveBy(t, "p", in.Name)
			if strings.HasPrefix(p.desc, "strip") {
				continue
			}
			_, _ = p.apply(pod)
		}
		if _, err := in.Strip(pod); err != nil {
			t.Fatalf("Strip: %v", err)
		}
		a, _ := json.Marshal(orig)
		b, _ := json.Marshal(pod)
		if !jsonpatch.Equal(a, b) {
			t.Fatalf("strip did not restore the pod\norig: %s\ngot:  %s", a, b)
		}
	})
}

func containsAny(s string, subs ...string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
}

// Strip then re-inject: a webhook re-invoked on an injected pod may strip its own items
// and inject them again; the pod must come out byte for byte as the first injection
// left it (same JSON, so the patch is empty).
func TestStripThenReinjectIsByteIdentical(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pod := genPod(t)
		in := Injector{Name: "ranktable"}
		var steps []primitive
		for i, n := 0, rapid.IntRange(1, 6).Draw(t, "steps"); i < n; i++ {
			if p := genPrimitiveBy(t, "p", in.Name); !strings.HasPrefix(p.desc, "strip") {
				steps = append(steps, p)
			}
		}
		inject := func() {
			for _, p := range steps {
				_, _ = p.apply(pod)
			}
		}
		inject()
		first, _ := json.Marshal(pod)
		if _, err := in.Strip(pod); err != nil {
			t.Fatalf("Strip: %v", err)
		}
		inject()
		again, _ := json.Marshal(pod)
		if string(first) != string(again) {
			t.Fatalf("re-injection after strip differs\nfirst: %s\nagain: %s", first, again)
		}
	})
}
