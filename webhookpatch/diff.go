package webhookpatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Diff returns the RFC 6902 operations that turn the JSON encoding of before into the
// JSON encoding of after.
//
//   - Elements appended to a list become single "add .../-" operations; elements
//     inserted elsewhere become "add .../<index>".
//   - Lists whose Kubernetes patchMergeKey identifies elements (containers and volumes
//     by name, mounts by mountPath, env by name, ...) and lists of distinct strings are
//     matched by key, so inserting a container first is one "add", not a cascade of
//     replaces. If kept elements were reordered the whole list is replaced.
//   - A map or list missing in before is added whole; map keys are escaped per RFC 6901.
//   - Operations come in a deterministic order: struct fields in declaration order, map
//     keys sorted, list elements in order.
//   - Nothing is removed that is present in after: fields the Go types do not know
//     (which the API server still holds) are never touched.
//
// Neither pod is mutated. Applying the result to before's JSON (as the API server
// does) yields after's JSON.
func Diff(before, after *corev1.Pod) ([]Operation, error) {
	if before == nil || after == nil {
		return nil, fmt.Errorf("webhookpatch: Diff needs two pods, got before=%v after=%v", before != nil, after != nil)
	}
	d := differ{}
	d.value(podInfo, reflect.ValueOf(before).Elem(), reflect.ValueOf(after).Elem())
	if d.err != nil {
		return nil, d.err
	}
	return d.ops, nil
}

type differ struct {
	path []byte
	ops  []Operation
	err  error
}

func (d *differ) emit(op string, v reflect.Value) {
	o := Operation{Op: op, Path: string(d.path)}
	if op != "remove" {
		b, err := json.Marshal(v.Interface())
		if err != nil && d.err == nil {
			d.err = fmt.Errorf("webhookpatch: %s: %w", o.Path, err)
		}
		o.Value = b
	}
	d.ops = append(d.ops, o)
}

// push appends "/token" to the current path and returns the length to restore.
func (d *differ) push(token string) int {
	n := len(d.path)
	d.path = append(d.path, '/')
	for i := 0; i < len(token); i++ {
		switch token[i] {
		case '~':
			d.path = append(d.path, '~', '0')
		case '/':
			d.path = append(d.path, '~', '1')
		default:
			d.path = append(d.path, token[i])
		}
	}
	return n
}

func (d *differ) pushIndex(i int) int {
	n := len(d.path)
	d.path = strconv.AppendInt(append(d.path, '/'), int64(i), 10)
	return n
}

func (d *differ) pop(n int) { d.path = d.path[:n] }

// value diffs two present values of the same type.
func (d *differ) value(ti *typeInfo, b, a reflect.Value) {
	switch ti.kind {
	case leafNode:
		if !leafEqual(b, a) {
			d.emit("replace", a)
		}
	case pointerNode:
		switch {
		case b.IsNil() && a.IsNil():
		case b.IsNil() || a.IsNil():
			d.emit("replace", a)
		default:
			d.value(ti.elem, b.Elem(), a.Elem())
		}
	case structNode:
		d.structFields(ti, b, a)
	case mapNode:
		d.mapEntries(ti, b, a)
	case listNode:
		d.list(ti, nil, b, a)
	}
}

func (d *differ) structFields(ti *typeInfo, b, a reflect.Value) {
	for i := range ti.fields {
		f := &ti.fields[i]
		fb, fa := b.FieldByIndex(f.index), a.FieldByIndex(f.index)
		pb, pa := f.present(fb), f.present(fa)
		if !pb && !pa {
			continue
		}
		n := d.push(f.name)
		switch {
		case !pb:
			d.emit("add", fa)
		case !pa:
			d.emit("remove", fa)
		case f.info.kind == listNode:
			d.list(f.info, f.keyIndex, fb, fa)
		default:
			d.value(f.info, fb, fa)
		}
		d.pop(n)
	}
}

func (d *differ) mapEntries(ti *typeInfo, b, a reflect.Value) {
	if b.IsNil() != a.IsNil() { // null and {} differ in JSON
		d.emit("replace", a)
		return
	}
	if b.Len() == 0 && a.Len() == 0 {
		return
	}
	keys := make([]string, 0, b.Len()+a.Len())
	for _, k := range b.MapKeys() {
		keys = append(keys, k.String())
	}
	for _, k := range a.MapKeys() {
		if !b.MapIndex(k).IsValid() {
			keys = append(keys, k.String())
		}
	}
	slices.Sort(keys)
	kt := b.Type().Key()
	for _, k := range keys {
		kv := reflect.ValueOf(k).Convert(kt)
		vb, va := b.MapIndex(kv), a.MapIndex(kv)
		n := d.push(k)
		switch {
		case !vb.IsValid():
			d.emit("add", va)
		case !va.IsValid():
			d.emit("remove", va)
		default:
			d.value(ti.elem, vb, va)
		}
		d.pop(n)
	}
}

// leafEqual compares two leaves by value, and json.Marshalers that differ in Go by
// their encoding (two Quantities can be equal with different cached strings).
func leafEqual(b, a reflect.Value) bool {
	switch b.Kind() {
	case reflect.String:
		return b.String() == a.String()
	case reflect.Bool:
		return b.Bool() == a.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return b.Int() == a.Int()
	}
	if reflect.DeepEqual(b.Interface(), a.Interface()) {
		return true
	}
	jb, err1 := json.Marshal(b.Interface())
	ja, err2 := json.Marshal(a.Interface())
	return err1 == nil && err2 == nil && bytes.Equal(jb, ja)
}
