package webhookpatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/kplan-dev/kplan/internal/canonhash"
)

// RecordAnnotation is the pod annotation that lists what each [Injector] injected: a
// JSON object mapping the injector's name to its items, each item to the content hash
// it had when injected. It holds no timestamps, so re-injection is byte-identical.
//
//	kplan.dev/injected: {"ranktable":{"initContainer/wait-ranktable":"1f0c…","volume/ranktable":"9a2e…"}}
//
// Item names: volume/<name>, initContainer/<name>, container/<name>,
// mount/<container>/<mountPath>, env/<container>/<name>, annotation/<key>, label/<key>.
//
// The annotation is user-editable. An empty value, JSON null, or an injector mapped to
// null mean nothing is recorded; any other value that is not such an object is an error
// naming the pod and the annotation.
const RecordAnnotation = "kplan.dev/injected"

// ErrConflict is wrapped by every error an Ensure primitive returns because the pod
// already holds a same-named object that differs and that the injector did not inject.
// Test for it with errors.Is.
var ErrConflict = errors.New("conflict")

// record is the decoded RecordAnnotation: injector -> item -> content hash.
type record map[string]map[string]string

func readRecord(pod *corev1.Pod) (record, error) {
	raw, ok := pod.Annotations[RecordAnnotation]
	if !ok || raw == "" {
		return record{}, nil
	}
	var rec record
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return nil, fmt.Errorf("%s: annotation %s: %w", podRef(pod), RecordAnnotation, err)
	}
	if rec == nil { // "null": JSON's way of saying there is no record
		rec = record{}
	}
	return rec, nil
}

// owns reports whether item is recorded for injector.
func (r record) owns(injector, item string) bool {
	_, ok := r[injector][item]
	return ok
}

// addedByOther reports whether an injector other than injector recorded item.
func (r record) addedByOther(injector, item string) bool {
	for name, items := range r {
		if _, ok := items[item]; ok && name != injector {
			return true
		}
	}
	return false
}

func (r record) hash(injector, item string) string { return r[injector][item] }

// injected reports whether item is recorded for injector with content hash hash: the
// item is what the injector wants now, as it injected it.
func (r record) injected(injector, item, hash string) bool {
	h, ok := r[injector][item]
	return ok && h == hash
}

// writeRecord stores rec on the pod, removing the annotation when rec is empty and the
// annotations map when nothing else is left in it.
func writeRecord(pod *corev1.Pod, rec record) {
	enc := rec.encode()
	if enc == "" {
		delete(pod.Annotations, RecordAnnotation)
		if len(pod.Annotations) == 0 {
			pod.Annotations = nil
		}
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[RecordAnnotation] = enc
}

// encode returns the record's annotation value, or "" when the record is empty and the
// annotation goes. Injectors without items are dropped from r.
func (r record) encode() string {
	for k, items := range r {
		if len(items) == 0 {
			delete(r, k)
		}
	}
	if len(r) == 0 {
		return ""
	}
	b, err := json.Marshal(r) // map keys are sorted: canonical
	if err != nil {
		panic(err) // map[string]map[string]string always marshals
	}
	return string(b)
}

// checkAnnotationSize returns an error when the pod's annotations, with the record
// replaced by rec and (when key is not empty) annotation key set to value, would hold
// more than apivalidation.TotalAnnotationSizeLimitB bytes, counted as the API server counts them.
// Primitives call it before they change the pod, so a pod they return always fits.
func checkAnnotationSize(pod *corev1.Pod, rec record, key, value string) error {
	total := 0
	for k, v := range pod.Annotations {
		if k != RecordAnnotation && k != key {
			total += len(k) + len(v)
		}
	}
	if enc := rec.encode(); enc != "" {
		total += len(RecordAnnotation) + len(enc)
	}
	if key != "" {
		total += len(key) + len(value)
	}
	if total > apivalidation.TotalAnnotationSizeLimitB {
		return fmt.Errorf("%s: metadata.annotations: the change would make them %d bytes (injection record %s included), more than the limit of %d",
			podRef(pod), total, RecordAnnotation, apivalidation.TotalAnnotationSizeLimitB)
	}
	return nil
}

func (r record) set(injector, item, hash string) {
	if r[injector] == nil {
		r[injector] = map[string]string{}
	}
	r[injector][item] = hash
}

func (r record) unset(injector, item string) { delete(r[injector], item) }

// contentHash is the hash recorded for an injected object: 16 hex digits of the
// canonical hash of its JSON encoding.
func contentHash(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // k8s API types always marshal
	}
	return canonhash.New().Bytes(b).Hex(16)
}

// storedString returns s as the API server stores it: a JSON encoder turns every byte
// that is not valid UTF-8 into U+FFFD. Values the primitives compare with the stored
// pod go through it, so a webhook re-invoked on the stored pod finds what it wrote.
func storedString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func podRef(pod *corev1.Pod) string {
	name := pod.Name
	if name == "" && pod.GenerateName != "" {
		name = pod.GenerateName + "*"
	}
	if pod.Namespace == "" {
		return "pod " + name
	}
	return "pod " + pod.Namespace + "/" + name
}
