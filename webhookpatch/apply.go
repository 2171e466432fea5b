package webhookpatch

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// Result says what an injection did to a pod. ranktable.Inject and revision.Inject
// report with it too.
type Result struct {
	// Changed reports whether the pod changed. A pod whose only difference is a nil
	// list or map made empty (or the reverse), or a quantity or time written in
	// another form, is unchanged: both encode alike (equality.Semantic).
	Changed bool
	// Items names the items of [RecordAnnotation], under the injector's name, that
	// the injection added, changed (a new content hash) or removed, sorted and
	// without repeats: "env/inference/RANKTABLEFILE", "volume/ranktable", ... Items
	// is empty when Changed is false.
	Items []string
}

// Apply runs inject on a deep copy of pod. If inject returns nil and the copy differs
// from pod, pod becomes the copy; if inject returns an error, pod is left exactly as
// it was and Apply returns that error. So however many Ensure calls inject makes, and
// whichever of them fails, either all of them take effect or none does. inject may
// call any Injector's primitives, or change the copy directly.
//
// The Result compares pod before and after, and lists the record items of in.Name
// that changed; items recorded under other injectors are not listed.
//
// A nil pod, a nil inject, an injector name that is not a DNS-1123 label or an
// unreadable record annotation is an error, and inject is not called. A record
// annotation that inject leaves unreadable is an error too, and pod is left as it
// was.
//
// When pod changes, its fields are replaced by the copy's: a pointer into pod taken
// before Apply (such as &pod.Spec.Containers[0]) still sees the old values.
func (in Injector) Apply(pod *corev1.Pod, inject func(pod *corev1.Pod) error) (Result, error) {
	if inject == nil {
		return Result{}, fmt.Errorf("webhookpatch: nil inject function")
	}
	before, err := in.check(pod)
	if err != nil {
		return Result{}, err
	}
	work := pod.DeepCopy()
	if err := inject(work); err != nil {
		return Result{}, err
	}
	after, err := readRecord(work)
	if err != nil {
		return Result{}, err
	}
	res := Result{Changed: !equality.Semantic.DeepEqual(pod, work)}
	for item, hash := range before[in.Name] {
		if h, ok := after[in.Name][item]; !ok || h != hash {
			res.Items = append(res.Items, item)
		}
	}
	for item := range after[in.Name] {
		if _, ok := before[in.Name][item]; !ok {
			res.Items = append(res.Items, item)
		}
	}
	slices.Sort(res.Items)
	if res.Changed {
		*pod = *work
	}
	return res, nil
}
