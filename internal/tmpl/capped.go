// Replacements for sprig functions whose results must be bounded or must not share or
// change their arguments: sequences, repeat and indent with size caps, JSON that reports
// errors, sorted keys and values, copying sortAlpha, chunk, and set and merge that refuse
// to make a dict contain itself. Each charges the execution's budget first.

package tmpl

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

var quoteImpl = sprigFuncs["quote"].(func(...any) string)

// quoteSpec is sprig's quote: %q of each argument's string value.
func quoteSpec(b *budget) any {
	return func(args ...any) (string, error) {
		if len(args) == 1 {
			if s, ok := args[0].(string); ok {
				n := int64(len(s))
				if err := b.charge("quote", 1+n/64, 4*n+16); err != nil {
					return "", err
				}
				return strconv.Quote(s), nil
			}
		}
		if err := deep(4)(b, "quote", reflectArgs(args)); err != nil {
			return "", err
		}
		return quoteImpl(args...), nil
	}
}

func reflectArgs(args []any) []reflect.Value {
	out := make([]reflect.Value, len(args))
	for i, a := range args {
		out[i] = reflect.ValueOf(a)
	}
	return out
}

// toJSONSpec is toJson reporting errors (sprig's swallows them).
func toJSONSpec(b *budget) any {
	return func(v any) (string, error) {
		if s, ok := v.(string); ok {
			n := int64(len(s))
			if err := b.charge("toJson", 1+n/64, 6*n+16); err != nil {
				return "", err
			}
		} else if err := deep(6)(b, "toJson", []reflect.Value{reflect.ValueOf(v)}); err != nil {
			return "", err
		}
		return toJSON(v)
	}
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toJson: %w", err)
	}
	return string(b), nil
}

func fromJSON(b *budget, fn, s string) (any, error) {
	if len(s) > MaxFromJSONBytes {
		return nil, tooLong(fn, int64(len(s)), MaxFromJSONBytes)
	}
	// Decoded values take at most about 24 bytes per input byte ("[0,0,...]").
	if err := b.charge(fn, 1+int64(len(s))/16, 24*int64(len(s))+64); err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	if _, err := b.walk(fn, v); err != nil {
		return nil, err
	}
	return v, nil
}

func tooLong(fn string, n int64, limit int) error {
	return fmt.Errorf("%s: %d exceeds the limit of %d: %w", fn, n, limit, ErrOutputTooLarge)
}

// stepCount is how many of start, start+step, start+2*step, ... come before stop
// (or reach it, when inclusive), computed without overflow.
func stepCount(start, stop, step int64, inclusive bool) uint64 {
	if step == 0 || (step > 0 && start > stop) || (step < 0 && start < stop) || (!inclusive && start == stop) {
		return 0
	}
	var span, abs uint64
	if step > 0 {
		span, abs = uint64(stop)-uint64(start), uint64(step)
	} else {
		span, abs = uint64(start)-uint64(stop), uint64(-(step+1))+1
	}
	if inclusive {
		return min(span/abs, math.MaxUint64-1) + 1
	}
	return (span-1)/abs + 1
}

func cappedUntilStep(b *budget, fn string, start, stop, step int) ([]int, error) {
	n := stepCount(int64(start), int64(stop), int64(step), false)
	if n == 0 {
		return nil, nil
	}
	if n > MaxSequenceLength {
		return nil, tooLong(fn, int64(min(n, math.MaxInt64)), MaxSequenceLength)
	}
	if err := b.charge(fn, int64(n), 8*int64(n)+24); err != nil {
		return nil, err
	}
	out := make([]int, n)
	v := start
	for i := range out {
		out[i] = v
		v += step // may wrap after the last element, which is not used
	}
	return out, nil
}

func cappedUntil(b *budget, count int) ([]int, error) {
	if count < 0 {
		return cappedUntilStep(b, "until", 0, count, -1)
	}
	return cappedUntilStep(b, "until", 0, count, 1)
}

// cappedSeq mirrors sprig's seq (the Unix seq command) for integer arguments.
func cappedSeq(b *budget, params ...int) (string, error) {
	start, stop, step := 1, 0, 1
	switch len(params) {
	case 0:
		return "", nil
	case 1:
		stop = params[0]
		if stop < start {
			step = -1
		}
	case 2:
		start, stop = params[0], params[1]
		if start > stop {
			step = -1
		}
	case 3:
		start, step, stop = params[0], params[1], params[2]
		if step < 0 && stop >= start {
			return "", nil // as sprig: counting down needs a smaller stop
		}
	default:
		return "", fmt.Errorf("seq: at most 3 arguments, got %d", len(params))
	}
	n := stepCount(int64(start), int64(stop), int64(step), true)
	if n == 0 {
		return "", nil
	}
	if n > MaxSequenceLength {
		return "", tooLong("seq", int64(min(n, math.MaxInt64)), MaxSequenceLength)
	}
	if err := b.charge("seq", int64(n), 21*int64(n)); err != nil {
		return "", err
	}
	var sb strings.Builder
	v := start
	for i := uint64(0); i < n; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(strconv.Itoa(v))
		v += step
	}
	return sb.String(), nil
}

func cappedRepeat(b *budget, count int, s string) (string, error) {
	if count <= 0 {
		return "", nil
	}
	n := satMul(int64(count), int64(len(s)))
	if n > MaxFuncStringBytes {
		return "", tooLong("repeat", n, MaxFuncStringBytes)
	}
	if err := b.charge("repeat", 1+n/64, n); err != nil {
		return "", err
	}
	return strings.Repeat(s, count), nil
}

func cappedIndent(b *budget, fn string, n int, s string) (string, error) {
	if n < 0 {
		n = 0
	}
	lines := int64(strings.Count(s, "\n")) + 1
	total := satAdd(int64(len(s)), satMul(lines, int64(n)))
	if total > MaxFuncStringBytes {
		return "", tooLong(fn, total, MaxFuncStringBytes)
	}
	if err := b.charge(fn, 1+total/64, total); err != nil {
		return "", err
	}
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
}

// sortAlpha is sprig's sortAlpha on a copy: sprig's sorts a []string argument in
// place, which changes the template's input.
func sortAlpha(list any) []string {
	v := reflect.Indirect(reflect.ValueOf(list))
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		a := slicesCloneStrings(sprigFuncs["toStrings"].(func(any) []string)(list))
		sort.Strings(a)
		return a
	}
	return []string{fmt.Sprint(list)}
}

// dictKeys is sprig's keys in sorted order (sprig's follows map iteration, which is
// random: the same table would render differently each time).
func dictKeys(dicts ...map[string]any) []string {
	var k []string
	for _, d := range dicts {
		for key := range d {
			k = append(k, key)
		}
	}
	sort.Strings(k)
	return k
}

// dictValues is sprig's values in the order of the sorted keys.
func dictValues(d map[string]any) []any {
	k := dictKeys(d)
	out := make([]any, len(k))
	for i, key := range k {
		out[i] = d[key]
	}
	return out
}

func slicesCloneStrings(a []string) []string { return append([]string(nil), a...) }

// chunk is sprig's mustChunk with a size check (sprig divides by the size).
func chunk(size int, list any) ([][]any, error) {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return nil, fmt.Errorf("cannot chunk type %T", list)
	}
	if size <= 0 {
		return nil, fmt.Errorf("chunk: size %d is not positive", size)
	}
	l := v.Len()
	out := make([][]any, 0, (l+size-1)/size)
	for i := 0; i < l; i += size {
		c := make([]any, 0, min(size, l-i))
		for j := i; j < l && j < i+size; j++ {
			c = append(c, v.Index(j).Interface())
		}
		out = append(out, c)
	}
	return out, nil
}

// setSpec is sprig's set, refusing to put a dict into itself.
func setSpec(b *budget) any {
	return func(d map[string]any, key string, value any) (map[string]any, error) {
		if err := b.charge("set", callWork, int64(len(key))+64); err != nil {
			return nil, err
		}
		if d == nil {
			return nil, fmt.Errorf("set: the dict is nil")
		}
		if in, err := b.containsMap("set", value, reflect.ValueOf(d)); err != nil || in {
			if err == nil {
				err = fmt.Errorf("set: the value contains the dict itself")
			}
			return nil, err
		}
		d[key] = value
		return d, nil
	}
}

// mergeSpec is sprig's merge (or mergeOverwrite), refusing to merge a dict into
// itself or a value containing it.
func mergeSpec(name string) funcSpec {
	impl := reflect.ValueOf(sprigFuncs[name])
	return func(b *budget) any {
		return func(dst map[string]any, srcs ...map[string]any) (any, error) {
			dv := reflect.ValueOf(dst)
			for _, src := range srcs {
				s, err := b.walk(name, src)
				if err != nil {
					return nil, err
				}
				if err := b.charge(name, 1, satMul(16, s.nodes)+s.bytes); err != nil {
					return nil, err
				}
				if dst == nil {
					continue
				}
				if in, err := b.containsMap(name, src, dv); err != nil || in {
					if err == nil {
						err = fmt.Errorf("%s: a source contains the destination dict", name)
					}
					return nil, err
				}
			}
			args := []reflect.Value{dv}
			for _, s := range srcs {
				args = append(args, reflect.ValueOf(s))
			}
			res := impl.Call(args)
			if len(res) == 2 && !res[1].IsNil() {
				return nil, res[1].Interface().(error)
			}
			return res[0].Interface(), nil
		}
	}
}
