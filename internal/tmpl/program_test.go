package tmpl

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestValues: wherever a template calls a late-bound value (actions, arguments,
// branches, ranges, defined templates) it returns the executing call's value, and a
// field of the same name is not a call.
func TestValues(t *testing.T) {
	cases := []struct {
		name, text string
		want       string
	}{
		{"a call in an action", `serverId: {{ nodeName }}`, "node-a"},
		{"a call in a pipeline argument", `serverId: {{ printf "%s" (podIP) | quote }}`, `"10.1.2.3"`},
		{"a call in an else branch", `{{ if not . }}x{{ else }}{{ podNamespace }}{{ end }}`, "ns-a"},
		{"a call in a range", `{{ range (fromJson .).devices }}{{ podName }}{{ end }}`, "pod-a"},
		{"a call in a defined template", `{{ define "x" }}{{ nodeName }}{{ end }}{{ template "x" }}`, "node-a"},
		{"a field of the same name", `{{ (fromJson .).podIP }} podIP nodeName`, "field podIP nodeName"},
	}
	names := []string{"podIP", "nodeName", "podName", "podNamespace"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(Spec{Name: "ns/p", Text: c.text, MissingKey: "zero", Values: names})
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Execute(`{"podIP":"field","devices":[1]}`, 1<<10, nil, "10.1.2.3", "node-a", "pod-a", "ns-a")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("output %q lacks %q", out, c.want)
			}
		})
	}
}

// TestConcurrentExecutionsSeeTheirOwnValues: executions of one Program on many
// goroutines each print their own values, and an execution after them without the
// values' owner sees none of theirs.
func TestConcurrentExecutionsSeeTheirOwnValues(t *testing.T) {
	p, err := Parse(Spec{Name: "p", Text: `{{ range until 50 }}{{ node }}{{ end }}`, Values: []string{"node"}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := fmt.Sprintf("n%d;", i)
			for range 20 {
				out, err := p.Execute(nil, 1<<20, nil, v)
				if err == nil && string(out) != strings.Repeat(v, 50) {
					err = fmt.Errorf("execution with %q printed %q", v, out)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if out, err := p.Execute(nil, 1<<20, nil, ""); err != nil || len(out) != 0 {
		t.Fatalf("an execution with an empty value printed %q (%v)", out, err)
	}
}

func TestSpecAndCallErrors(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		want string
	}{
		{"a value named like an engine function", Spec{Name: "t", Text: "x", Values: []string{"quote"}}, `Spec.Values[0]: "quote" is not an identifier free for a value`},
		{"a value named like a removed function", Spec{Name: "t", Text: "x", Values: []string{"a", "now"}}, `Spec.Values[1]: "now"`},
		{"a value named twice", Spec{Name: "t", Text: "x", Values: []string{"a", "a"}}, `Spec.Values[1]: "a"`},
		{"a value that is not an identifier", Spec{Name: "t", Text: "x", Values: []string{"a-b"}}, `Spec.Values[0]: "a-b"`},
		{"a value named like a hidden function", Spec{Name: "t", Text: "x", Values: []string{"_x"}}, `Spec.Values[0]: "_x"`},
		{"a call of an undeclared value", Spec{Name: "t", Text: "{{ podIP }}"}, `function "podIP" not defined`},
		{"an unknown missingkey option", Spec{Name: "t", Text: "x", MissingKey: "panic"}, `Spec.MissingKey: "panic" is not error, zero, default or invalid`},
		{"a recursive template", Spec{Name: "t", Text: `{{ define "a" }}{{ template "a" }}{{ end }}`}, `template "a" calls itself (a -> a)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	p, err := Parse(Spec{Name: "ns/t", Text: "{{ a }}{{ b }}", Values: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Execute(nil, 10, nil, "x"); err == nil || !strings.Contains(err.Error(), "template ns/t: 1 values given for 2 declared (a, b)") {
		t.Fatalf("too few values: %v", err)
	}
	if _, err := ParseUnbudgeted(Spec{Name: "t", Text: "x", MissingKey: "panic"}); err == nil {
		t.Fatal("ParseUnbudgeted took an unknown missingkey option")
	}
	if _, err := (*Program)(nil).Execute(nil, 10, nil); err == nil {
		t.Fatal("a nil Program executed")
	}
}

// TestLimits: the limits given apply (and are named as given), zero limits are the
// defaults, and the output cap is the Execute argument.
func TestLimits(t *testing.T) {
	cases := []struct {
		name   string
		limits Limits
		text   string
		output int
		want   error
		msg    string
	}{
		{"the work limit is named", Limits{Work: 1000, WorkName: "MaxWork"}, `{{ range until 1000 }}{{ end }}`, 1 << 10, ErrBudgetExceeded, "the work limit of 1000 units is exceeded (MaxWork)"},
		{"an unnamed work limit", Limits{Work: 1000}, `{{ range until 1000 }}{{ end }}`, 1 << 10, ErrBudgetExceeded, "the work limit of 1000 units is exceeded: template budget exceeded"},
		{"the value bytes limit is named", Limits{ValueBytes: 1000, ValueBytesName: "MaxBytes"}, `{{ $x := repeat 2000 "x" }}`, 1 << 10, ErrBudgetExceeded, "the limit of 1000 bytes of template values is exceeded (MaxBytes)"},
		{"zero limits are the defaults", Limits{}, `{{ range 10000000 }}{{ end }}`, 1 << 10, ErrBudgetExceeded, fmt.Sprintf("the work limit of %d units", DefaultMaxWork)},
		{"the output cap", Limits{}, `{{ repeat 2000 "x" }}`, 1999, ErrOutputTooLarge, "more than 1999 bytes"},
		{"a result over its own cap", Limits{}, `{{ $x := repeat 1048577 "x" }}`, 1 << 10, ErrOutputTooLarge, "repeat: 1048577 exceeds the limit of 1048576"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(Spec{Name: "t", Text: c.text, Limits: c.limits})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Execute(nil, c.output, nil)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want one wrapping %v containing %q", err, c.want, c.msg)
			}
		})
	}
}

// TestExecuteAppendsToBuf: the output is written into buf's array from its start, so a
// caller reuses one buffer.
func TestExecuteAppendsToBuf(t *testing.T) {
	p, err := Parse(Spec{Name: "t", Text: `{{ .A }}-{{ .B }}`, MissingKey: "error"})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3, 64)
	out, err := p.Execute(map[string]int{"A": 1, "B": 2}, 64, buf)
	if err != nil || string(out) != "1-2" || &out[0] != &buf[:1][0] {
		t.Fatalf("output %q (%v), in buf's array: %v", out, err, err == nil && &out[0] == &buf[:1][0])
	}
	if _, err := p.Execute(map[string]int{"A": 1}, 64, nil); err == nil || !strings.Contains(err.Error(), `map has no entry for key "B"`) {
		t.Fatalf("missingkey=error: %v", err)
	}
}

// TestParseUnbudgeted: the unbudgeted program renders what the budgeted one renders and
// is not charged.
func TestParseUnbudgeted(t *testing.T) {
	text := `{{ range .Servers }}{{ .ServerId }}:{{ range .Devices }}{{ .RankId }},{{ end }}{{ toJson . | len }};{{ end }}`
	spec := Spec{Name: "t", Text: text, MissingKey: "error", Limits: Limits{Work: 100}}
	raw, err := ParseUnbudgeted(spec)
	if err != nil {
		t.Fatal(err)
	}
	data := testTable(4, 8)
	want, err := raw.Execute(data, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.Limits.Work = 0
	p, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Execute(data, 1<<20, nil); err != nil || string(got) != string(want) {
		t.Fatalf("budgeted %q (%v), unbudgeted %q", got, err, want)
	}
}

// TestErrorsNameNoInsertedFunction: where an error's location prints a node the loader
// appended a check to, the check is left out.
func TestErrorsNameNoInsertedFunction(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"an undefined template called without an argument", `{{template "0"}}`, `at <{{template "0"}}>: template "0" not defined`},
		{"an undefined template called with dot", `{{template "0" .}}`, `at <{{template "0" .}}>: template "0" not defined`},
		{"a range over too many elements", `{{ range 10000000 }}{{ end }}`, `at <range>: range over 10000000 elements`},
		{"a missing field in a called template", `{{ define "a" }}{{ .X.Y }}{{ end }}{{ template "a" 1 }}`, `at <.X.Y>: can't evaluate field X in type int`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(Spec{Name: "t", Text: c.text, MissingKey: "error"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Execute(testTable(1, 1), 1<<20, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "_kplan") {
				t.Fatalf("error %v, want one containing %q and no inserted function", err, c.want)
			}
		})
	}
}
