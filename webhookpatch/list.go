package webhookpatch

import (
	"reflect"
	"strconv"
)

// list diffs two present lists. keyIndex names the element field that identifies
// elements; lists of strings are keyed by the strings themselves. Lists without keys,
// or with duplicate keys, are diffed by position.
func (d *differ) list(ti *typeInfo, keyIndex []int, b, a reflect.Value) {
	if b.IsNil() != a.IsNil() { // null and [] differ in JSON
		d.emit("replace", a)
		return
	}
	elemIsString := b.Type().Elem().Kind() == reflect.String
	if keyIndex == nil && !elemIsString {
		d.positional(ti, b, a)
		return
	}
	key := func(v reflect.Value, i int) string {
		e := v.Index(i)
		if elemIsString {
			return e.String()
		}
		k := e.FieldByIndex(keyIndex)
		if k.Kind() == reflect.String {
			return k.String()
		}
		return strconv.FormatInt(k.Int(), 10)
	}
	nb, na := b.Len(), a.Len()

	// Fast path: the same keys in the same order, possibly with appended elements.
	common := 0
	for common < nb && common < na && key(b, common) == key(a, common) {
		common++
	}
	if common == nb {
		d.elements(ti, b, a, common)
		d.appendFrom(a, common)
		return
	}

	bKeys, ok := keySet(b, nb, key)
	if !ok {
		d.positional(ti, b, a)
		return
	}
	aKeys, ok := keySet(a, na, key)
	if !ok {
		d.positional(ti, b, a)
		return
	}
	// Kept elements must keep their relative order, else replace the whole list.
	var kept []int // indices into b of elements also in a, in b order
	for i := 0; i < nb; i++ {
		if _, in := aKeys[key(b, i)]; in {
			kept = append(kept, i)
		}
	}
	j := 0
	for i := 0; i < na; i++ {
		k := key(a, i)
		if _, in := bKeys[k]; !in {
			continue
		}
		if j >= len(kept) || key(b, kept[j]) != k {
			d.emit("replace", a)
			return
		}
		j++
	}

	// Removes, from the highest index down so earlier indices stay valid.
	for i := nb - 1; i >= 0; i-- {
		if _, in := aKeys[key(b, i)]; !in {
			n := d.pushIndex(i)
			d.emit("remove", reflect.Value{})
			d.pop(n)
		}
	}
	// Walk after in order: kept elements are diffed in place, new ones inserted.
	j = 0
	for i := 0; i < na; i++ {
		if j < len(kept) && key(b, kept[j]) == key(a, i) {
			n := d.pushIndex(i)
			d.value(ti.elem, b.Index(kept[j]), a.Index(i))
			d.pop(n)
			j++
			continue
		}
		var n int
		if j == len(kept) { // nothing of before follows: append
			n = d.push("-")
		} else {
			n = d.pushIndex(i)
		}
		d.emit("add", a.Index(i))
		d.pop(n)
	}
}

// positional diffs element by element, then appends or removes the tail.
func (d *differ) positional(ti *typeInfo, b, a reflect.Value) {
	nb, na := b.Len(), a.Len()
	d.elements(ti, b, a, min(nb, na))
	d.appendFrom(a, nb)
	for i := nb - 1; i >= na; i-- {
		n := d.pushIndex(i)
		d.emit("remove", reflect.Value{})
		d.pop(n)
	}
}

// elements diffs the first count elements pairwise.
func (d *differ) elements(ti *typeInfo, b, a reflect.Value, count int) {
	for i := 0; i < count; i++ {
		n := d.pushIndex(i)
		d.value(ti.elem, b.Index(i), a.Index(i))
		d.pop(n)
	}
}

// appendFrom emits "add /-" for a's elements from index from on.
func (d *differ) appendFrom(a reflect.Value, from int) {
	for i := from; i < a.Len(); i++ {
		n := d.push("-")
		d.emit("add", a.Index(i))
		d.pop(n)
	}
}

// keySet returns the keys of the list, or false when a key repeats.
func keySet(v reflect.Value, n int, key func(reflect.Value, int) string) (map[string]struct{}, bool) {
	set := make(map[string]struct{}, n)
	for i := 0; i < n; i++ {
		k := key(v, i)
		if _, dup := set[k]; dup {
			return nil, false
		}
		set[k] = struct{}{}
	}
	return set, true
}
