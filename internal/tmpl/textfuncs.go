// text/template's own functions (print, printf, println, html, js, urlquery, the
// comparisons and index), wrapped to charge their cost before they run.

package tmpl

import (
	"fmt"
	"reflect"
	"strings"
)

// printSpec is print or println, which format their arguments with fmt.
func printSpec(name string, f func(...any) string) funcSpec {
	return func(b *budget) any {
		return func(args ...any) (string, error) {
			if err := deep(1)(b, name, reflectArgs(args)); err != nil {
				return "", err
			}
			return f(args...), nil
		}
	}
}

// printfSpec is printf. Widths and precisions (at most 1e6 each in fmt, from the
// format or from '*' arguments) apply to every element of list arguments.
func printfSpec(b *budget) any {
	return func(format string, args ...any) (string, error) {
		var s valueSize
		for _, a := range args {
			as, err := b.walk("printf", a)
			if err != nil {
				return "", err
			}
			s.bytes, s.leaves = satAdd(s.bytes, as.bytes), satAdd(s.leaves, as.leaves)
		}
		pad := formatNumbers(format)
		if strings.Contains(format, "*") {
			for _, a := range args {
				if v := reflect.ValueOf(a); v.CanInt() {
					pad = satAdd(pad, min(max(v.Int(), -v.Int(), 0), 1e6))
				}
			}
		}
		n := satAdd(satAdd(int64(len(format)), satMul(4, s.bytes)), satMul(pad, max(1, s.leaves)))
		n = satAdd(n, 16*int64(len(args)))
		if err := b.charge("printf", 1+n/64, n); err != nil {
			return "", err
		}
		return fmt.Sprintf(format, args...), nil
	}
}

// formatNumbers sums the numbers in a format string (each at most fmt's 1e6).
func formatNumbers(f string) int64 {
	var sum, cur int64
	for i := 0; i <= len(f); i++ {
		if i < len(f) && f[i] >= '0' && f[i] <= '9' {
			cur = min(cur*10+int64(f[i]-'0'), 1e6+1)
			continue
		}
		sum = satAdd(sum, cur)
		cur = 0
	}
	return sum
}

// compareCost charges for the strings compared.
func compareCost(b *budget, fn string, args ...reflect.Value) error {
	var n int64
	for _, a := range args {
		a = indirectInterface(a)
		if a.Kind() == reflect.String {
			n = satAdd(n, int64(a.Len()))
		}
	}
	if n < 64 {
		return b.tick(fn)
	}
	return b.charge(fn, 1+n/64, 0)
}

func compareSpec(name string, f func(reflect.Value, ...reflect.Value) (bool, error)) funcSpec {
	return func(b *budget) any {
		return func(a reflect.Value, rest ...reflect.Value) (bool, error) {
			if err := compareCost(b, name, append(rest, a)...); err != nil {
				return false, err
			}
			return f(a, rest...)
		}
	}
}

func compare2Spec(name string, f func(reflect.Value, reflect.Value) (bool, error)) funcSpec {
	return func(b *budget) any {
		return func(a, c reflect.Value) (bool, error) {
			if err := compareCost(b, name, a, c); err != nil {
				return false, err
			}
			return f(a, c)
		}
	}
}

func indexSpec(b *budget) any {
	return func(item reflect.Value, indexes ...reflect.Value) (reflect.Value, error) {
		if err := compareCost(b, "index", indexes...); err != nil {
			return reflect.Value{}, err
		}
		return index(item, indexes...)
	}
}
