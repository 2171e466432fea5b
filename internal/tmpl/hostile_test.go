package tmpl

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/sprig/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

// hostileCase is a template a hostile user could write. It must fail (at parse or at
// execution) with an error wrapping want (nil: any error) whose text contains text,
// quickly, in this process; or, when renders is set, execute without error just as
// quickly (its output is the caller's to reject).
type hostileCase struct {
	name, template string
	parser         bool // run as a parser template: the annotation as dot, values declared
	want           error
	text           string
	renders        bool
}

var deep5000 = strings.Repeat("[", 5000) + strings.Repeat("]", 5000)

var hostileCorpus = []hostileCase{
	// Sizes that overflowed or were not checked.
	{name: "indent with a huge count on many lines", template: `{{ indent 4611686018427387904 (repeat 1000 "x\n") }}`, want: ErrOutputTooLarge, text: "indent"},
	{name: "nindent with a huge count on many lines", template: `{{ nindent 9223372036854775807 (repeat 100000 "\n") }}`, want: ErrOutputTooLarge, text: "nindent"},
	{name: "untilStep over the whole int64 range", template: `{{ range untilStep -9223372036854775808 9223372036854775807 1 }}x{{ end }}`, want: ErrOutputTooLarge, text: "untilStep"},
	{name: "untilStep near the int64 limit", template: `{{ range untilStep 9223372036854775000 9223372036854775807 3 }}x{{ end }}`, renders: true},
	{name: "untilStep with the most negative step", template: `{{ range untilStep 9223372036854775807 -9223372036854775808 -9223372036854775808 }}{{ . }}{{ end }}`, renders: true},
	{name: "seq over the whole int64 range", template: `{{ seq -9223372036854775808 9223372036854775807 }}`, want: ErrOutputTooLarge, text: "seq"},
	{name: "seq up to the int64 limit", template: `{{ seq 9223372036854775806 9223372036854775807 }}`, renders: true},
	{name: "repeat with a count that overflows", template: `{{ repeat 4611686018427387904 "xxxx" }}`, want: ErrOutputTooLarge, text: "repeat"},
	// Cycles and unbounded depth.
	{name: "a dict set into itself and printed", template: `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $d }}`, text: "contains the dict itself"},
	{name: "a dict set into itself and passed to toJson", template: `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ toJson $d }}`, text: "contains the dict itself"},
	{name: "a dict set into itself through a list", template: `{{ $d := dict }}{{ $_ := set $d "l" (list 1 (list $d)) }}{{ deepCopy $d }}`, text: "contains the dict itself"},
	{name: "a dict merged with a dict holding it", template: `{{ $d := dict "x" 1 }}{{ $_ := merge $d (dict "y" $d) }}{{ $d }}`, text: "contains the destination"},
	{name: "a dict mergeOverwritten with itself inside", template: `{{ $d := dict "x" 1 }}{{ $_ := mergeOverwrite $d (dict "y" (list $d)) }}`, text: "contains the destination"},
	{name: "a dict nested 1000 deep then deepCopied", template: `{{ $d := dict }}{{ range until 1000 }}{{ $d = dict "a" $d }}{{ end }}{{ deepCopy $d }}`, want: ErrBudgetExceeded, text: "nested deeper"},
	{name: "a list nested 1000 deep then printed", template: `{{ $d := list }}{{ range until 1000 }}{{ $d = list $d }}{{ end }}{{ $d }}`, want: ErrBudgetExceeded, text: "nested deeper"},
	{name: "a dict nested 1000 deep then toPrettyJson", template: `{{ $d := dict }}{{ range until 1000 }}{{ $d = dict "a" $d }}{{ end }}{{ toPrettyJson $d }}`, want: ErrBudgetExceeded, text: "nested deeper"},
	{name: "a dict nested 1000 deep then printf %v", template: `{{ $d := dict }}{{ range until 1000 }}{{ $d = dict "a" $d }}{{ end }}{{ printf "%v" $d }}`, want: ErrBudgetExceeded, text: "nested deeper"},
	{name: "fromJson of 5000 nested arrays", template: `{{ fromJson "` + deep5000 + `" }}`, want: ErrBudgetExceeded, text: "nested deeper"},
	{name: "a shared list doubled 60 times and printed", template: `{{ $l := list 1 }}{{ range until 60 }}{{ $l = list $l $l }}{{ end }}{{ $l }}`, want: ErrBudgetExceeded},
	{name: "a shared dict doubled 60 times and printed", template: `{{ $d := dict "a" 1 }}{{ range until 60 }}{{ $d = dict "a" $d "b" $d }}{{ end }}{{ $d }}`, want: ErrBudgetExceeded},
	{name: "a dict shared by a deep list grown after", template: `{{ $d := dict }}{{ $l := list $d $d }}{{ range until 20 }}{{ $l = list $l $l }}{{ end }}{{ $_ := set $d "x" (repeat 100000 "y") }}{{ $l }}`, want: ErrBudgetExceeded},
	{name: "a recursive template", template: `{{ define "a" }}{{ template "a" . }}{{ end }}{{ template "a" . }}`, text: "recursive templates are not allowed"},
	{name: "mutually recursive templates", template: `{{ define "a" }}{{ template "b" . }}{{ end }}{{ define "b" }}{{ template "a" . }}{{ end }}{{ template "a" . }}`, text: "recursive templates are not allowed"},
	{name: "40 levels of templates calling the next twice", template: nestedCalls(40), want: ErrBudgetExceeded},
	{name: "20000 nested parentheses", template: "{{ " + strings.Repeat("(", 20000) + "1" + strings.Repeat(")", 20000) + " }}", text: "depth"},
	{name: "a loop of cheap function calls", template: `{{ range 10000000 }}{{ $x := trim (upper (lower "a")) }}{{ end }}`, want: ErrBudgetExceeded, text: "MaxTemplateWork"},
	// Intermediate values that grow without output.
	{name: "a string doubled with print", template: `{{ $s := "x" }}{{ range until 100 }}{{ $s = print $s $s }}{{ end }}`, want: ErrBudgetExceeded, text: "MaxTemplateValueBytes"},
	{name: "a string doubled with printf", template: `{{ $s := "x" }}{{ range until 100 }}{{ $s = printf "%s%s" $s $s }}{{ end }}`, want: ErrBudgetExceeded, text: "MaxTemplateValueBytes"},
	{name: "a string doubled with cat", template: `{{ $s := "x" }}{{ range until 100 }}{{ $s = cat $s $s }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "a list doubled with concat", template: `{{ $l := list 1 }}{{ range until 100 }}{{ $l = concat $l $l }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "a list grown with append", template: `{{ $l := list }}{{ range until 65536 }}{{ $l = append $l (repeat 1000 "x") }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "printf with a huge width in a loop", template: `{{ range until 100 }}{{ $x := printf "%0999999d" 1 }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "printf with huge widths on every element of a list", template: `{{ printf "%0999999v" (until 1000) }}`, want: ErrBudgetExceeded},
	{name: "printf with a star width", template: `{{ range until 100 }}{{ $x := printf "%*d%*d" 999999 1 999999 2 }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "printf with a huge width printed", template: `{{ printf "%0999999d" 1 }}{{ printf "%0999999d" 1 }}`, want: ErrOutputTooLarge},
	{name: "b64dec of huge strings", template: `{{ $s := repeat 250000 "QUFB" }}{{ range until 100 }}{{ $x := b64dec $s }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "regexReplaceAll of an empty match with a long replacement", template: `{{ regexReplaceAll "" (repeat 100000 "a") (repeat 1000 "b") }}`, want: ErrBudgetExceeded},
	{name: "regexReplaceAll expanding the match many times", template: `{{ regexReplaceAll "(a+)" (repeat 100000 "a") (repeat 500 "${1}") }}`, want: ErrBudgetExceeded},
	{name: "a huge regular expression", template: `{{ regexMatch "((((a{0,1000}){0,1000}){0,1000}){0,1000})" "a" }}`},
	{name: "a large regular expression on a long input in a loop", template: `{{ $s := repeat 1000000 "a" }}{{ range until 1000 }}{{ $x := regexMatch "(a|b|c|d|e|f|g|h|i|j)*z" $s }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "semver on junk", template: `{{ semver (repeat 100000 "1.") }}`},
	{name: "replace with an empty old string", template: `{{ replace "" (repeat 1000 "x") (repeat 100000 "y") }}`, want: ErrBudgetExceeded},
	{name: "chunk of size zero", template: `{{ chunk 0 (list 1 2) }}`, text: "not positive"},
	{name: "division by zero", template: `{{ div 1 0 }}`, text: "divide by zero"},
	{name: "toYaml (not a sprig function)", template: `{{ toYaml . }}`, text: `function "toYaml" not defined`},
	// CPU.
	{name: "two nested ranges over until 65536", template: `{{ range until 65536 }}{{ range until 65536 }}{{ end }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "two nested ranges over until 65536 bound once", template: `{{ $l := until 65536 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}`, want: ErrBudgetExceeded, text: "MaxTemplateWork"},
	{name: "uniq of until 65536", template: `{{ uniq (until 65536) }}`, want: ErrBudgetExceeded, text: "MaxTemplateWork"},
	{name: "without on until 65536", template: `{{ without (until 65536) 1 2 3 }}`, want: ErrBudgetExceeded},
	{name: "range over a billion", template: `{{ range 1000000000 }}{{ end }}`, want: ErrBudgetExceeded, text: "MaxTemplateWork"},
	{name: "nested ranges over integers", template: `{{ range 100000 }}{{ range 100000 }}{{ end }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "comparing long strings in a loop", template: `{{ $a := repeat 1000000 "a" }}{{ $b := repeat 1000000 "a" }}{{ range until 65536 }}{{ if eq $a $b }}{{ end }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "ordering long strings in a loop", template: `{{ $a := repeat 1000000 "a" }}{{ $b := repeat 1000000 "a" }}{{ range until 65536 }}{{ if lt $a $b }}{{ end }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "indexing a dict with a long key in a loop", template: `{{ $a := repeat 1000000 "a" }}{{ $d := dict }}{{ range until 65536 }}{{ $x := index $d $a }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "sortAlpha of long lists in a loop", template: `{{ $l := until 65536 }}{{ range until 65536 }}{{ $x := sortAlpha $l }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "deepEqual of long lists in a loop", template: `{{ $l := until 65536 }}{{ range until 65536 }}{{ $x := deepEqual $l $l }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "toJson of the table in a loop", template: `{{ range until 65536 }}{{ $x := toJson $ }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "range over a dict of 65536 keys in a loop", template: `{{ $d := dict }}{{ range until 65536 }}{{ $_ := set $d (toString .) 1 }}{{ end }}{{ range until 65536 }}{{ range $d }}{{ end }}{{ end }}`, want: ErrBudgetExceeded},
	// Functions that depend on the clock, the time zone, randomness or the environment.
	{name: "toDate", template: `{{ toDate "2006-01-02" "2024-01-01" }}`, text: `function "toDate" is not available: it reads the time zone`},
	{name: "durationRound", template: `{{ durationRound "2h" }}`, text: `function "durationRound" is not available: it reads the clock`},
	{name: "unixEpoch", template: `{{ unixEpoch 0 }}`, text: `function "unixEpoch" is not available`},
	{name: "date", template: `{{ date "2006" 0 }}`, text: `function "date" is not available`},
	{name: "dateInZone", template: `{{ dateInZone "2006" 0 "UTC" }}`, text: `function "dateInZone" is not available`},
	{name: "now in a defined template", template: `{{ define "x" }}{{ now }}{{ end }}{}`, text: `function "now" is not available: it reads the clock`},
	{name: "env", template: `{{ env "HOME" }}`, text: `function "env" is not available: it reads the environment`},
	{name: "osBase", template: `{{ osBase "a/b" }}`, text: `function "osBase" is not available: its result depends on the operating system`},
	// Parser templates run under the same budget.
	{name: "parser: two nested ranges over until 65536", parser: true, template: `{{ $l := until 65536 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}`, want: ErrBudgetExceeded, text: "MaxTemplateWork"},
	{name: "parser: a string doubled with print", parser: true, template: `{{ $s := . }}{{ range until 100 }}{{ $s = print $s $s }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "parser: a dict set into itself", parser: true, template: `{{ $d := fromJson . }}{{ $_ := set $d "self" $d }}{{ $d }}`, text: "contains the dict itself"},
	{name: "parser: uniq of until 65536", parser: true, template: `{{ uniq (until 65536) }}`, want: ErrBudgetExceeded},
	{name: "parser: a value read in nested loops", parser: true, template: `{{ range until 65536 }}{{ range until 1000 }}{{ $x := podIP }}{{ end }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "parser: now", parser: true, template: `{{ now }}`, text: `function "now" is not available`},
}

// cpuLimit is the most CPU time a hostile case may take: under a second at the
// default budget (the slowest case takes about a quarter), with room for the race
// detector.
func cpuLimit() time.Duration {
	if raceEnabled {
		return 20 * time.Second
	}
	return 2 * time.Second
}

// nestedCalls defines templates t0..t(n-1), each calling the previous one twice.
func nestedCalls(n int) string {
	var b strings.Builder
	b.WriteString(`{{ define "t0" }}x{{ end }}`)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, `{{ define "t%d" }}{{ template "t%d" . }}{{ template "t%d" . }}{{ end }}`, i, i-1, i-1)
	}
	fmt.Fprintf(&b, `{{ template "t%d" . }}`, n-1)
	return b.String()
}

// runHostile parses and executes c as a caller of the engine does: a table template
// on a table with missingkey=error and a 1 MiB output cap, a parser template on an
// annotation string with missingkey=zero, declared values and a 256 KiB cap.
func runHostile(c hostileCase, limits Limits) error {
	spec := Spec{Name: "ns/hostile", Text: c.template, MissingKey: "error", Limits: limits}
	var data any = testTable(4, 8)
	limit := 1 << 20
	var values []string
	if c.parser {
		spec.MissingKey, spec.Values = "zero", testValueNames
		data, limit, values = testAnnotation, 256<<10, testValues
	}
	p, err := Parse(spec)
	if err != nil {
		return err
	}
	_, err = p.Execute(data, limit, nil, values...)
	return err
}

func TestHostileTemplates(t *testing.T) {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var slowest time.Duration
	var slowestName string
	for _, c := range hostileCorpus {
		t.Run(c.name, func(t *testing.T) {
			// CPU time: the machine is shared, wall time measures the neighbours.
			start := cpuTime()
			err := runHostile(c, Limits{WorkName: "MaxTemplateWork", ValueBytesName: "MaxTemplateValueBytes"})
			elapsed := cpuTime() - start
			if elapsed > slowest {
				slowest, slowestName = elapsed, c.name
			}
			if limit := cpuLimit(); elapsed > limit {
				t.Errorf("took %s of CPU time, more than %s", elapsed, limit)
			}
			if c.renders {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v does not wrap %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("error %v does not contain %q", err, c.text)
			}
			if strings.Contains(err.Error(), "_kplan") {
				t.Errorf("error %v names a function the loader inserted", err)
			}
		})
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d cases; slowest %s of CPU (%s); heap %d KiB before, %d KiB after (%+d KiB)",
		len(hostileCorpus), slowest, slowestName, before.HeapAlloc>>10, after.HeapAlloc>>10, grown>>10)
	if grown > 8<<20 {
		t.Errorf("the heap grew by %d MiB over the corpus", grown>>20)
	}
}

func TestSequencesAtTheIntLimits(t *testing.T) {
	const maxI, minI = math.MaxInt64, math.MinInt64
	b := &budget{maxWork: DefaultMaxWork, maxBytes: DefaultMaxValueBytes}
	cases := []struct {
		name              string
		start, stop, step int
		want              []int
	}{
		{"up to the largest int", maxI - 5, maxI, 2, []int{maxI - 5, maxI - 3, maxI - 1}},
		{"down to the smallest int", minI + 5, minI, -2, []int{minI + 5, minI + 3, minI + 1}},
		{"the most negative step", maxI, minI, minI, []int{maxI, -1}},
		{"the largest step", minI, maxI, maxI, []int{minI, -1, maxI - 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := cappedUntilStep(b, "untilStep", c.start, c.stop, c.step)
			if err != nil {
				t.Fatalf("untilStep %d %d %d: %v", c.start, c.stop, c.step, err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("untilStep %d %d %d (-want +got):\n%s", c.start, c.stop, c.step, diff)
			}
		})
	}
	if s, err := cappedSeq(b, maxI-1, maxI); err != nil || s != "9223372036854775806 9223372036854775807" {
		t.Fatalf("seq at the limit: %q %v", s, err)
	}
	if s, err := cappedSeq(b, minI+1, -1, minI); err != nil || s != "-9223372036854775807 -9223372036854775808" {
		t.Fatalf("seq down to the limit: %q %v", s, err)
	}
}

// TestSequencesMatchSprig: away from the limits until, untilStep and seq return what
// sprig's do.
func TestSequencesMatchSprig(t *testing.T) {
	b := &budget{perCall: true, maxWork: DefaultMaxWork, maxBytes: DefaultMaxValueBytes}
	sprigUntilStep := sprig.GenericFuncMap()["untilStep"].(func(int, int, int) []int)
	sprigSeq := sprig.GenericFuncMap()["seq"].(func(...int) string)
	rapid.Check(t, func(t *rapid.T) {
		start := rapid.IntRange(-300, 300).Draw(t, "start")
		stop := rapid.IntRange(-300, 300).Draw(t, "stop")
		step := rapid.IntRange(-20, 20).Draw(t, "step")
		got, err := cappedUntilStep(b, "untilStep", start, stop, step)
		if err != nil {
			t.Fatalf("untilStep %d %d %d: %v", start, stop, step, err)
		}
		if diff := cmp.Diff(sprigUntilStep(start, stop, step), got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("untilStep %d %d %d (-sprig +got):\n%s", start, stop, step, diff)
		}
		for _, args := range [][]int{{stop}, {start, stop}, {start, step, stop}} {
			if step == 0 && len(args) == 3 {
				continue // sprig's seq loops forever
			}
			got, err := cappedSeq(b, args...)
			if want := sprigSeq(args...); err != nil || got != want {
				t.Fatalf("seq %v = %q, %v; sprig %q", args, got, err, want)
			}
		}
	})
}
