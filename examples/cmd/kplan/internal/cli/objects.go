package cli

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/manifest"
)

// defaultNamespace is the namespace of objects that name none, as kubectl's default
// context does.
const defaultNamespace = "default"

func namespaceOf(o *manifest.Object) string {
	if o.Namespace == "" {
		return defaultNamespace
	}
	return o.Namespace
}

// byKind returns the objects of kind (any API group), in input order.
func byKind(objs []manifest.Object, kind string) []*manifest.Object {
	var out []*manifest.Object
	for i := range objs {
		if objs[i].Kind == kind {
			out = append(out, &objs[i])
		}
	}
	return out
}

// pick selects one object of a kind by a flag value ("name" or "namespace/name"), or
// the only one when the flag is empty.
func pick(o *options, objs []*manifest.Object, kind, flagName, value string) (*manifest.Object, error) {
	if value != "" {
		ns, name, ok := strings.Cut(value, "/")
		if !ok {
			ns, name = "", value
		}
		var found []*manifest.Object
		for _, obj := range objs {
			if obj.Name == name && (ns == "" || namespaceOf(obj) == ns) {
				found = append(found, obj)
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("no %s %q in %s (--%s)", kind, value, inputs(o), flagName)
		case 1:
			return found[0], nil
		}
		return nil, usagef("--%s %q matches %d %ss: give namespace/name", flagName, value, len(found), kind)
	}
	switch len(objs) {
	case 0:
		return nil, fmt.Errorf("no %s in %s", kind, inputs(o))
	case 1:
		return objs[0], nil
	}
	var names []string
	for _, obj := range objs {
		names = append(names, namespaceOf(obj)+"/"+obj.Name)
	}
	sort.Strings(names)
	if len(names) > 5 {
		names = append(names[:5], "...")
	}
	return nil, usagef("%d %ss in the input (%s): choose one with --%s", len(objs), kind, strings.Join(names, ", "), flagName)
}

// pickPod selects the pod --pod names among candidates (see pick) and returns it
// with its object; pods and podObjs are decodePods' answer, candidates some of
// podObjs.
func pickPod(o *options, pods []*corev1.Pod, podObjs, candidates []*manifest.Object) (*corev1.Pod, *manifest.Object, error) {
	podObj, err := pick(o, candidates, "Pod", "pod", o.pod)
	if err != nil {
		return nil, nil, err
	}
	i := slices.Index(podObjs, podObj)
	return pods[i], podObj, nil
}

// blame prefixes a library error with the place of the object it names: the first of
// candidates whose "namespace/name" appears in the message, else primary. Library
// errors name objects but not files.
func blame(err error, primary *manifest.Object, candidates []*manifest.Object) error {
	msg := err.Error()
	for _, c := range candidates {
		if mentions(msg, namespaceOf(c)+"/"+c.Name) {
			return fmt.Errorf("%s: %v", c.Where(), err)
		}
	}
	if primary == nil {
		return err
	}
	return fmt.Errorf("%s: %v", primary.Where(), err)
}

// mentions reports whether msg names id as a whole word: "default/web-1" is not
// mentioned by "default/web-10".
func mentions(msg, id string) bool {
	for i := 0; ; {
		j := strings.Index(msg[i:], id)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(id)
		if (start == 0 || !nameByte(msg[start-1])) && (end == len(msg) || !nameByte(msg[end])) {
			return true
		}
		i = start + 1
	}
}

func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '.'
}

// buffer is a bytes.Buffer for tables.
type buffer = bytes.Buffer

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }

func intOrZero() intstr.IntOrString { return intstr.FromInt32(0) }

// inputs names the -f arguments for messages about the input as a whole.
func inputs(o *options) string {
	names := make([]string, len(o.files))
	for i, f := range o.files {
		names[i] = f
		if f == "-" {
			names[i] = "stdin"
		}
	}
	return strings.Join(names, ", ")
}
