package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Object is one Kubernetes object read from a manifest.
type Object struct {
	// Source is the file name ("stdin" for standard input).
	Source string
	// Doc is the 1-based YAML document number in the file.
	Doc int
	// Item is the 1-based item number inside a List, 0 when the object is a document
	// of its own.
	Item int
	// APIVersion, Kind, Namespace and Name are the object's identity as written
	// (Namespace may be empty).
	APIVersion, Kind, Namespace, Name string
	// JSON is the object as JSON.
	JSON []byte
}

// Where names the object's place: "pods.yaml: document 2, item 3".
func (o *Object) Where() string {
	s := fmt.Sprintf("%s: document %d", o.Source, o.Doc)
	if o.Item > 0 {
		s += fmt.Sprintf(", item %d", o.Item)
	}
	return s
}

// ID is "Kind namespace/name" (or "Kind name" without a namespace).
func (o *Object) ID() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// String names the object and its place: "pods.yaml: document 2 (Pod default/web-0)".
func (o *Object) String() string { return o.Where() + " (" + o.ID() + ")" }

// Errorf returns an error that starts with the object's String.
func (o *Object) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", o, fmt.Sprintf(format, args...))
}

// Decode unmarshals the object into v (a typed Kubernetes object). Unknown fields are
// ignored, as kubectl does for fields newer than its client; a field of the wrong type
// is an error naming the object and the field.
func (o *Object) Decode(v any) error {
	err := json.Unmarshal(o.JSON, v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(object)"
		}
		return o.Errorf("%s: cannot use a JSON %s as %s", field, te.Value, te.Type)
	}
	return o.Errorf("%v", err)
}

// Key identifies an object for duplicate detection.
type Key struct{ Group, Kind, Namespace, Name string }

// KeyOf returns o's key; namespace "" is treated as def.
func KeyOf(o *Object, def string) Key {
	group, _, _ := strings.Cut(o.APIVersion, "/")
	if !strings.Contains(o.APIVersion, "/") {
		group = ""
	}
	ns := o.Namespace
	if ns == "" {
		ns = def
	}
	return Key{Group: group, Kind: o.Kind, Namespace: ns, Name: o.Name}
}

// Dedupe returns an error naming both places when two objects have the same key
// (same group, kind, namespace and name): planning the same pod twice is always a
// mistake in the input.
func Dedupe(objs []Object, defaultNamespace string) error {
	seen := make(map[Key]int, len(objs))
	for i := range objs {
		k := KeyOf(&objs[i], defaultNamespace)
		if j, ok := seen[k]; ok {
			return fmt.Errorf("%s: the same object is also in %s", &objs[i], objs[j].Where())
		}
		seen[k] = i
	}
	return nil
}
