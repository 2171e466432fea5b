package webhookpatch

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// kind of a node in the diff walk, decided once per Go type.
type nodeKind int

const (
	leafNode    nodeKind = iota // compared whole, replaced whole (scalars, json.Marshalers)
	pointerNode                 // nil is JSON null
	structNode
	mapNode
	listNode
)

// typeInfo is what the diff needs to know about a Go type, mirroring encoding/json.
type typeInfo struct {
	kind   nodeKind
	fields []fieldInfo // structNode
	elem   *typeInfo   // pointerNode, mapNode, listNode
}

type fieldInfo struct {
	index     []int
	name      string
	omitEmpty bool
	omitZero  bool
	info      *typeInfo
	// keyIndex is the element field that identifies the elements of a list field
	// (from the Kubernetes patchMergeKey tag), nil when there is none.
	keyIndex []int
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	// podInfo describes corev1.Pod and every type reachable from it. It is built once
	// at package initialisation and never changes afterwards.
	podInfo = newTypeInfo(reflect.TypeFor[corev1.Pod](), map[reflect.Type]*typeInfo{})
)

func newTypeInfo(t reflect.Type, seen map[reflect.Type]*typeInfo) *typeInfo {
	if ti, ok := seen[t]; ok {
		return ti
	}
	ti := &typeInfo{}
	seen[t] = ti
	switch {
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) ||
		t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType):
		ti.kind = leafNode
	case t.Kind() == reflect.Pointer:
		ti.kind, ti.elem = pointerNode, newTypeInfo(t.Elem(), seen)
	case t.Kind() == reflect.Struct:
		ti.kind = structNode
		ti.fields = structFields(t, nil, seen)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		ti.kind, ti.elem = mapNode, newTypeInfo(t.Elem(), seen)
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		ti.kind, ti.elem = listNode, newTypeInfo(t.Elem(), seen)
	default:
		ti.kind = leafNode
	}
	return ti
}

// structFields lists the JSON fields of t in declaration order, flattening anonymous
// struct fields without a JSON name (",inline") the way encoding/json does.
func structFields(t reflect.Type, prefix []int, seen map[reflect.Type]*typeInfo) []fieldInfo {
	var out []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		index := append(append([]int{}, prefix...), i)
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, structFields(f.Type, index, seen)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fi := fieldInfo{
			index:     index,
			name:      name,
			omitEmpty: strings.Contains(","+opts+",", ",omitempty,"),
			omitZero:  strings.Contains(","+opts+",", ",omitzero,"),
			info:      newTypeInfo(f.Type, seen),
		}
		if mk := f.Tag.Get("patchMergeKey"); mk != "" && fi.info.kind == listNode {
			fi.keyIndex = keyIndex(f.Type.Elem(), mk)
		}
		out = append(out, fi)
	}
	return out
}

// keyIndex returns the field index path of the element field named by mergeKey.
func keyIndex(elem reflect.Type, mergeKey string) []int {
	if elem.Kind() != reflect.Struct {
		return nil
	}
	for i := 0; i < elem.NumField(); i++ {
		name, _, _ := strings.Cut(elem.Field(i).Tag.Get("json"), ",")
		if name == mergeKey {
			k := elem.Field(i).Type.Kind()
			if k == reflect.String || (k >= reflect.Int && k <= reflect.Uint64) {
				return []int{i}
			}
		}
	}
	return nil
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// isZero is encoding/json's omitzero test.
func isZero(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return true
		}
		return z.IsZero()
	}
	return v.IsZero()
}

// present reports whether field f with value v appears in the JSON encoding.
func (f *fieldInfo) present(v reflect.Value) bool {
	if f.omitEmpty && isEmpty(v) {
		return false
	}
	if f.omitZero && isZero(v) {
		return false
	}
	return true
}
