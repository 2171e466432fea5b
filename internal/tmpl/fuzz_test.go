package tmpl

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// fuzzLimits keep each fuzzed execution short; a template using them up stops in
// milliseconds, so an execution taking seconds is a hole in the budget.
var fuzzLimits = Limits{Work: 200_000, ValueBytes: 2 << 20}

func addTemplateSeeds(f *testing.F) {
	for _, c := range hostileCorpus {
		f.Add(c.template)
	}
	f.Add(`{{ $d := dict "a" (list 1 2 (dict "b" "c")) }}{{ toJson $d }}`)
	f.Add(`{"ids": {{ toJson (sortAlpha (list "b" "a")) }}, "s": {{ .ServerCount }}}`)
	f.Add(`{{ range $i, $s := .Servers }}{{ if $i }},{{ end }}{{ $s.ServerId | quote }}{{ end }}`)
	f.Add("{{- $data := . | fromJson -}}\npodName: {{ $data.pod_name | quote }}\nserverId: {{ nodeName | quote }}\n")
}

// FuzzTemplate parses arbitrary template texts, as a table template (on a table,
// missingkey=error) and as a parser template (on an annotation, missingkey=zero, with
// values), and executes what parses: no panic, no fatal error, no execution that runs
// for seconds, output within the cap, and an error that names no inserted function.
func FuzzTemplate(f *testing.F) {
	addTemplateSeeds(f)
	data := testTable(4, 8)
	f.Fuzz(func(t *testing.T, text string) {
		for _, parser := range []bool{false, true} {
			spec := Spec{Name: "ns/fuzz", Text: text, MissingKey: "error", Limits: fuzzLimits}
			var d any = data
			var values []string
			if parser {
				spec.MissingKey, spec.Values = "zero", testValueNames
				d, values = testAnnotation, testValues
			}
			p, err := Parse(spec)
			if err != nil {
				continue
			}
			start := time.Now()
			out, err := p.Execute(d, 64<<10, nil, values...)
			if el := time.Since(start); el > 3*time.Second {
				t.Fatalf("execution took %s", el)
			}
			if len(out) > 64<<10 {
				t.Fatalf("%d bytes of output over the cap", len(out))
			}
			if err != nil && strings.Contains(err.Error(), "_kplan") {
				t.Fatalf("error %v names an inserted function", err)
			}
		}
	})
}

// FuzzFromJSON decodes arbitrary strings with fromJson and prints, encodes and copies
// the result: no panic, fromJson accepts only what encoding/json accepts, and toJson
// of what it decoded is valid JSON.
func FuzzFromJSON(f *testing.F) {
	f.Add(testAnnotation)
	f.Add(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`)
	f.Add(`{"a": 1e400}`)
	f.Add(`{"a": "\u0000\ud800", "b": [true, null, -0.0]}`)
	f.Add(`"<>&|"`)
	encode, err := Parse(Spec{Name: "ns/json", Text: `{{ toJson (fromJson .) }}`, Limits: fuzzLimits})
	if err != nil {
		f.Fatal(err)
	}
	use, err := Parse(Spec{Name: "ns/use", Text: `{{ $v := fromJson . }}{{ $v }}{{ deepCopy $v | toPrettyJson }}{{ printf "%v" $v }}{{ $v | toString | len }}`, Limits: fuzzLimits})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := use.Execute(s, 1<<20, nil); err != nil && strings.Contains(err.Error(), "_kplan") {
			t.Fatalf("error %v names an inserted function", err)
		}
		out, err := encode.Execute(s, 1<<20, nil)
		if err != nil {
			return
		}
		var want any
		if json.Unmarshal([]byte(s), &want) != nil {
			t.Fatalf("fromJson accepted %q, which encoding/json rejects", s)
		}
		if !json.Valid(out) {
			t.Fatalf("toJson of %q is not valid JSON: %q", s, out)
		}
	})
}

// FuzzPrintf formats arbitrary format strings with arbitrary widths under the budget:
// a result is charged before it is built, so whatever printf returns fits the value
// bytes limit.
func FuzzPrintf(f *testing.F) {
	f.Add("%0999999d", 3)
	f.Add("%*d%-*.*v", 999999)
	f.Add("%[2]*[1]d %v %x", -1000000)
	p, err := Parse(Spec{Name: "ns/printf", Text: `{{ printf .F .N (list .N "x" (dict "k" .N)) .N }}`, Limits: fuzzLimits})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, format string, n int) {
		out, err := p.Execute(map[string]any{"F": format, "N": n}, 8<<20, nil)
		if err != nil {
			return
		}
		if int64(len(out)) > fuzzLimits.ValueBytes {
			t.Fatalf("printf %q %d built %d bytes, over the %d charged at most", format, n, len(out), fuzzLimits.ValueBytes)
		}
	})
}
