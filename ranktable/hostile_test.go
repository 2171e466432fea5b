package ranktable

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hostileCase is a template a hostile user could write, loaded as the ranktable
// template or as the parser template. It must fail (at load or as a Failed group)
// with an error wrapping want (nil: any error) whose text contains text, quickly. The
// template engine's own tests run the full hostile corpus; these check that
// ranktable loads, runs and reports such templates as it should.
type hostileCase struct {
	name, template string
	parser         bool // the text is a parser template (the ranktable template is the design's)
	want           error
	text           string
}

var hostileCorpus = []hostileCase{
	{name: "repeat with a count that overflows", template: `{{ repeat 4611686018427387904 "xxxx" }}`, want: ErrOutputTooLarge, text: "repeat"},
	{name: "untilStep near the int64 limit", template: `{{ range untilStep 9223372036854775000 9223372036854775807 3 }}x{{ end }}`, text: "not valid JSON"},
	{name: "seq up to the int64 limit", template: `{{ seq 9223372036854775806 9223372036854775807 }}`, text: "not valid JSON"},
	{name: "a dict set into itself and printed", template: `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $d }}`, text: "contains the dict itself"},
	{name: "a list nested 1000 deep then printed", template: `{{ $d := list }}{{ range until 1000 }}{{ $d = list $d }}{{ end }}{{ $d }}`, want: ErrBudgetExceeded, text: "nested deeper"},
	{name: "a recursive template", template: `{{ define "a" }}{{ template "a" . }}{{ end }}{{ template "a" . }}`, text: "recursive templates are not allowed"},
	{name: "a loop of cheap function calls", template: `{{ range 10000000 }}{{ $x := trim (upper (lower "a")) }}{{ end }}`, want: ErrBudgetExceeded, text: "MaxTemplateWork"},
	{name: "a string doubled with print", template: `{{ $s := "x" }}{{ range until 100 }}{{ $s = print $s $s }}{{ end }}`, want: ErrBudgetExceeded, text: "MaxTemplateValueBytes"},
	{name: "printf with a huge width printed", template: `{{ printf "%0999999d" 1 }}{{ printf "%0999999d" 1 }}`, want: ErrOutputTooLarge},
	{name: "toJson of the table in a loop", template: `{{ range until 65536 }}{{ $x := toJson $ }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "a pod function in a ranktable template", template: `{"n": {{ nodeName | quote }}}`, text: `function "nodeName" not defined`},
	{name: "env", template: `{{ env "HOME" }}`, text: `function "env" is not available: it reads the environment`},
	{name: "parser: two nested ranges over until 65536", parser: true, template: `{{ $l := until 65536 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}`, want: ErrBudgetExceeded, text: "MaxTemplateWork"},
	{name: "parser: a string doubled with print", parser: true, template: `{{ $s := . }}{{ range until 100 }}{{ $s = print $s $s }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "parser: a dict set into itself", parser: true, template: `{{ $d := fromJson . }}{{ $_ := set $d "self" $d }}{{ $d }}`, text: "contains the dict itself"},
	{name: "parser: output over the annotation limit", parser: true, template: `{{ range until 300 }}{{ repeat 1000 "x" }}{{ end }}`, want: ErrOutputTooLarge, text: "more than 262144 bytes"},
	{name: "parser: a pod function in a loop", parser: true, template: `{{ range until 65536 }}{{ range until 1000 }}{{ $x := podIP }}{{ end }}{{ end }}`, want: ErrBudgetExceeded},
	{name: "parser: now", parser: true, template: `{{ now }}`, text: `function "now" is not available`},
}

// cpuLimit is the most CPU time a hostile case may take: under a second at the
// default budget, with room for the race detector.
func cpuLimit() time.Duration {
	if raceEnabled {
		return 20 * time.Second
	}
	return 2 * time.Second
}

// loadHostile loads c's template (as the ranktable template, or as the parser
// template of the design's ranktable template).
func loadHostile(c hostileCase) (*Template, error) {
	d := validRTData()
	if !c.parser {
		d[KeyRanktableTemplate] = c.template
		return LoadTemplate(rtCM(d), nil, LoadOptions{})
	}
	d[KeyPodParserTemplate] = "hostile-parser"
	parser := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hostile-parser", Namespace: "kthena-system"},
		Data: map[string]string{KeyParserTemplate: c.template}}
	return LoadTemplate(rtCM(d), parser, LoadOptions{})
}

// runHostile loads and plans c, returning the error (load error or the group's).
func runHostile(c hostileCase) error {
	tm, err := loadHostile(c)
	if err != nil {
		return err
	}
	o := testOwner("qwen-inference")
	res, err := Plan(Input{Owner: o, Template: tm, Pods: designPods(o), Grouping: designGrouping, Now: t0})
	if err != nil {
		return err
	}
	for _, g := range res.Groups {
		if g.Phase == PhaseFailed {
			return g.Error
		}
	}
	return nil
}

// TestHostileTemplates: a hostile template fails its group (or its load) with an
// error that names the template's ConfigMap and wraps the package's error variables,
// and names no function the engine inserted.
func TestHostileTemplates(t *testing.T) {
	for _, c := range hostileCorpus {
		t.Run(c.name, func(t *testing.T) {
			start := cpuTime()
			err := runHostile(c)
			elapsed := cpuTime() - start
			if err == nil {
				t.Fatal("no error")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v does not wrap %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("error %v does not contain %q", err, c.text)
			}
			if !strings.Contains(err.Error(), "kthena-system/") {
				t.Errorf("error %v does not name the template", err)
			}
			if strings.Contains(err.Error(), "_kplan") {
				t.Errorf("error %v names a function the loader inserted", err)
			}
			if limit := cpuLimit(); elapsed > limit {
				t.Errorf("took %s of CPU time, more than %s", elapsed, limit)
			}
		})
	}
}

// fuzzLimits keep each fuzzed execution short; a template using them up stops in
// milliseconds, so an execution taking seconds is a hole in the budget.
var fuzzLimits = LoadOptions{MaxTemplateWork: 200_000, MaxTemplateValueBytes: 2 << 20}

func addTemplateSeeds(f *testing.F) {
	for _, c := range hostileCorpus {
		f.Add(c.template)
	}
	for _, cm := range LibraryConfigMaps() {
		for _, k := range []string{KeyRanktableTemplate, KeyParserTemplate} {
			if s := cm.Data[k]; s != "" {
				f.Add(s)
			}
		}
	}
	f.Add(`{{ $d := dict "a" (list 1 2 (dict "b" "c")) }}{{ toJson $d }}`)
	f.Add(`{"ids": {{ toJson (sortAlpha (list "b" "a")) }}, "s": {{ .ServerCount }}}`)
}

// FuzzPlannerTemplates plans an owner with a fuzzed ranktable template on a Planner
// while another owner with a library template plans on the same Planner: the good
// owner's result is Plan's, and so is the fuzzed owner's, on the first call and
// from the cache.
func FuzzPlannerTemplates(f *testing.F) {
	addTemplateSeeds(f)
	bad, good := testOwner("fuzzed"), testOwner("good")
	goodTm := withoutNative(mustLibrary(f, LibraryMindIERole, LoadOptions{}))
	goodIn := Input{Owner: good, Template: goodTm, Pods: designPods(good), Grouping: designGrouping, Now: t0}
	goodWant, err := Plan(goodIn)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		d := validRTData()
		d[KeyRanktableTemplate] = text
		tm, err := LoadTemplate(rtCM(d), nil, fuzzLimits)
		if err != nil {
			return
		}
		badIn := Input{Owner: bad, Template: tm, Pods: designPods(bad), Grouping: designGrouping, Now: t0, MaxOutputBytes: 64 << 10}
		badWant, err := Plan(badIn)
		if err != nil {
			t.Fatal(err)
		}
		p := NewPlanner()
		var wg sync.WaitGroup
		var badGot [2]Result
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range badGot {
				badGot[i], _ = p.Plan(badIn)
			}
		}()
		var goodGot Result
		go func() {
			defer wg.Done()
			goodGot, _ = p.Plan(goodIn)
		}()
		wg.Wait()
		if !resultsEqual(goodGot, goodWant) {
			t.Fatal("the good owner's result differs from Plan's")
		}
		for i, got := range badGot {
			if !resultsEqual(got, badWant) {
				t.Fatalf("call %d: the fuzzed owner's result differs from Plan's", i)
			}
		}
	})
}
