package webhookpatch

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
)

// Operation is one RFC 6902 JSON patch operation. Value holds the JSON value for "add"
// and "replace" (it may be the JSON literal null) and is empty for "remove".
type Operation struct {
	// Op is "add", "replace" or "remove" (the operations Diff emits).
	Op string
	// Path is the JSON pointer (RFC 6901) of the location; "~" in a token is written
	// "~0" and "/" is written "~1" (annotation keys contain "/").
	Path string
	// Value is the JSON value; empty for "remove".
	Value json.RawMessage
}

// MarshalJSON encodes the operation as an AdmissionResponse patch carries it:
// {"op":"add","path":"/spec/volumes/-","value":{...}}.
func (o Operation) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteString(`{"op":`)
	op, _ := json.Marshal(o.Op)
	b.Write(op)
	b.WriteString(`,"path":`)
	path, _ := json.Marshal(o.Path)
	b.Write(path)
	if o.Op != "remove" {
		if len(o.Value) == 0 {
			return nil, fmt.Errorf("webhookpatch: %s %s: operation has no value", o.Op, o.Path)
		}
		b.WriteString(`,"value":`)
		b.Write(o.Value)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// String returns the operation as JSON.
func (o Operation) String() string {
	b, err := o.MarshalJSON()
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Patch returns the JSON patch bytes and the patch type an AdmissionResponse carries
// for ops, or nil and nil when there are no operations (an AdmissionResponse must not
// carry an empty patch with a patch type).
func Patch(ops []Operation) ([]byte, *admissionv1.PatchType, error) {
	if len(ops) == 0 {
		return nil, nil, nil
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return nil, nil, err
	}
	pt := admissionv1.PatchTypeJSONPatch
	return b, &pt, nil
}
