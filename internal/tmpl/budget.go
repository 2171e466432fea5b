package tmpl

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
)

// Defaults of the budget (Limits.Work and Limits.ValueBytes).
const (
	// DefaultMaxWork is the default work limit of one execution. A unit is about one
	// evaluation step: a function call, one iteration of a range body (counted per
	// action in the body), a template call, about 64 bytes a function reads, or one
	// element of a value a function walks. Rendering a rank table of 1024 pods x 16
	// NPUs through ranktable's MindIE template takes about 0.5 million units; a
	// template that uses up the default stops within about a quarter of a second of
	// CPU time.
	DefaultMaxWork = 5_000_000
	// DefaultMaxValueBytes is the default limit on the bytes of all values the
	// functions of one template execution build (strings, lists, dicts), counted
	// before they are built and never given back: an upper bound on the memory one
	// execution holds besides its output.
	DefaultMaxValueBytes = 16 << 20
)

// MaxValueDepth is the deepest a value built by a template (or decoded by fromJson)
// may nest. A value can never contain itself.
const MaxValueDepth = 64

// ErrBudgetExceeded is wrapped by every error caused by an execution using more work or
// building more bytes of values than its budget allows, or building a value nested too
// deeply. Test for it with errors.Is.
var ErrBudgetExceeded = errors.New("template budget exceeded")

// budget counts the work and the value bytes of one template execution. Every function
// a template can call charges it before it works or allocates; the first charge over a
// limit returns an error, and so does every later one.
type budget struct {
	work, bytes       int64
	maxWork, maxBytes int64
	// workName and bytesName name the limits in errors (Limits.WorkName, ...).
	workName, bytesName string
	// perCall makes every charge stand alone (FuncMap's functions, used outside
	// this package's executions): a single call may not exceed the limits.
	perCall bool
}

func (b *budget) reset(l Limits) {
	*b = budget{maxWork: l.Work, maxBytes: l.ValueBytes, workName: l.WorkName, bytesName: l.ValueBytesName}
}

// charge adds work units and value bytes, failing once either limit is exceeded.
func (b *budget) charge(fn string, work, bytes int64) error {
	if b.perCall {
		if work > b.maxWork {
			return b.workErr(fn)
		}
		if bytes > b.maxBytes {
			return b.bytesErr(fn)
		}
		return nil
	}
	b.work = satAdd(b.work, work)
	b.bytes = satAdd(b.bytes, bytes)
	if b.work > b.maxWork {
		return b.workErr(fn)
	}
	if b.bytes > b.maxBytes {
		return b.bytesErr(fn)
	}
	return nil
}

// tick charges one unit of work; it is the common case, kept small.
func (b *budget) tick(fn string) error {
	if b.work++; b.work > b.maxWork && !b.perCall {
		return b.workErr(fn)
	}
	return nil
}

func (b *budget) workErr(fn string) error {
	return fmt.Errorf("%s: the work limit of %d units is exceeded%s: %w", fn, b.maxWork, setting(b.workName), ErrBudgetExceeded)
}

func (b *budget) bytesErr(fn string) error {
	return fmt.Errorf("%s: the limit of %d bytes of template values is exceeded%s: %w", fn, b.maxBytes, setting(b.bytesName), ErrBudgetExceeded)
}

// setting is " (name)", or "" for no name.
func setting(name string) string {
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

// satAdd and satMul are overflow-safe: they stop at math.MaxInt64. Arguments are
// never negative.
func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

func satMul(a, b int64) int64 {
	if a < 0 || b < 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// valueSize is what walking a value found.
type valueSize struct {
	// bytes bounds the bytes formatting the value (fmt's %v, JSON) or copying it
	// takes, without widths, quoting or escaping.
	bytes int64
	// leaves counts the scalars (strings, numbers, ...), nodes every element.
	leaves, nodes int64
}

// errTooDeep is returned by walk for values nested deeper than MaxValueDepth.
func errTooDeep(fn string) error {
	return fmt.Errorf("%s: value nested deeper than %d levels: %w", fn, MaxValueDepth, ErrBudgetExceeded)
}

// walk measures v, charging one unit of work per element visited (a value shared
// several times is visited as often as it appears: the work is what formatting or
// copying it costs). Values nested deeper than MaxValueDepth are an error. The result
// does not depend on map iteration order: the walk stops only at the work limit (after
// a number of elements that does not depend on the order) and reports depth after.
func (b *budget) walk(fn string, v any) (valueSize, error) {
	w := walker{limit: b.remaining()}
	w.any(v, 0)
	if err := b.charge(fn, w.s.nodes, 0); err != nil {
		return w.s, err
	}
	if w.over {
		return w.s, b.workErr(fn)
	}
	if w.tooDeep {
		return w.s, errTooDeep(fn)
	}
	return w.s, nil
}

// remaining is the work left (for a per-call budget, the whole limit).
func (b *budget) remaining() int64 {
	if b.perCall {
		return b.maxWork
	}
	return max(b.maxWork-b.work, 0)
}

// walker visits a value's elements up to limit, not below MaxValueDepth. find, when
// valid, is a map whose presence it records.
type walker struct {
	s             valueSize
	limit         int64
	over, tooDeep bool
	find          reflect.Value
	found         bool
}

// visit counts one element; false stops the walk (the limit is reached) or skips
// the element's content (too deep).
func (w *walker) visit(depth int) bool {
	if w.over {
		return false
	}
	if w.s.nodes++; w.s.nodes > w.limit {
		w.over = true
		return false
	}
	if depth > MaxValueDepth {
		w.tooDeep = true
		return false
	}
	return true
}

// any walks the values fromJson and the dict and list functions build without
// reflection, and everything else with it.
func (w *walker) any(v any, depth int) {
	switch x := v.(type) {
	case nil:
		if w.visit(depth) {
			w.s.bytes += 5
			w.s.leaves++
		}
	case string:
		if w.visit(depth) {
			w.s.bytes = satAdd(w.s.bytes, int64(len(x)))
			w.s.leaves++
		}
	case bool, int, int64, float64:
		if w.visit(depth) {
			w.s.bytes += 24
			w.s.leaves++
		}
	case []any:
		if w.visit(depth) {
			w.s.bytes += 2
			for _, e := range x {
				w.s.bytes++
				w.any(e, depth+1)
			}
		}
	case map[string]any:
		if w.find.IsValid() && w.find.Kind() == reflect.Map && reflect.ValueOf(x).UnsafePointer() == w.find.UnsafePointer() {
			w.found = true
		}
		if w.visit(depth) {
			w.s.bytes += 5
			for k, e := range x {
				w.s.bytes = satAdd(w.s.bytes, int64(len(k))+2)
				w.any(e, depth+1)
			}
		}
	default:
		w.value(reflect.ValueOf(v), depth)
	}
}

func (w *walker) value(v reflect.Value, depth int) {
	if v.Kind() == reflect.Map && w.find.IsValid() && v.UnsafePointer() == w.find.UnsafePointer() {
		w.found = true
	}
	if !w.visit(depth) {
		return
	}
	s := &w.s
	switch v.Kind() {
	case reflect.Invalid:
		s.bytes += 5 // <nil>
		s.leaves++
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			s.bytes += 5
			s.leaves++
			return
		}
		s.bytes += 2
		w.value(v.Elem(), depth+1)
	case reflect.String:
		s.bytes = satAdd(s.bytes, int64(v.Len()))
		s.leaves++
	case reflect.Bool:
		s.bytes += 5
		s.leaves++
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s.bytes += 20
		s.leaves++
	case reflect.Float32, reflect.Float64:
		s.bytes += 24
		s.leaves++
	case reflect.Complex64, reflect.Complex128:
		s.bytes += 52
		s.leaves++
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			// Bytes: formatted as numbers or base64.
			s.bytes = satAdd(s.bytes, satMul(int64(v.Len()), 4)+2)
			s.leaves++
			return
		}
		s.bytes += 2
		for i := 0; i < v.Len() && !w.over; i++ {
			s.bytes++
			w.value(v.Index(i), depth+1)
		}
	case reflect.Map:
		s.bytes += 5
		it := v.MapRange()
		for it.Next() && !w.over {
			s.bytes += 2
			w.value(it.Key(), depth+1)
			w.value(it.Value(), depth+1)
		}
	case reflect.Struct:
		s.bytes += 2
		t := v.Type()
		for i := 0; i < v.NumField() && !w.over; i++ {
			s.bytes += int64(len(t.Field(i).Name)) + 2
			w.value(v.Field(i), depth+1)
		}
	default: // chan, func, unsafe pointer: an address
		s.bytes += 20
		s.leaves++
	}
}

// containsMap reports whether v holds the map m (by identity) at any depth, charging
// the walk. Like walk, its result does not depend on map iteration order.
func (b *budget) containsMap(fn string, v any, m reflect.Value) (bool, error) {
	w := walker{limit: b.remaining(), find: m}
	w.any(v, 0)
	if err := b.charge(fn, w.s.nodes, 0); err != nil {
		return false, err
	}
	if w.over {
		return false, b.workErr(fn)
	}
	if w.found {
		return true, nil
	}
	if w.tooDeep {
		return false, errTooDeep(fn)
	}
	return false, nil
}

// shallowBytes is what a function that reads its arguments once looks at: string
// lengths, and a word per element of lists and maps (their elements are not walked).
func shallowBytes(args []reflect.Value) int64 {
	var n int64
	for _, a := range args {
		n = satAdd(n, shallowOf(a))
	}
	return n
}

func shallowOf(a reflect.Value) int64 {
	for a.Kind() == reflect.Interface || a.Kind() == reflect.Pointer {
		if a.IsNil() {
			return 8
		}
		a = a.Elem()
	}
	switch a.Kind() {
	case reflect.String:
		return int64(a.Len())
	case reflect.Slice, reflect.Array, reflect.Map:
		return satMul(int64(a.Len()), 16) + 16
	}
	return 8
}
