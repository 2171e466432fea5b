package ranktable

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/internal/tmpl"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rtCM(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rt", Namespace: "kthena-system", UID: "uid-rt", ResourceVersion: "1"}, Data: data}
}

func validRTData() map[string]string {
	return map[string]string{
		KeyInferenceEngine: "mindie", KeyLevel: "role", KeyPodParserTemplate: BuiltinRanktableJSON,
		KeyRanktableTemplate: `{"n": "{{ .ServerCount }}"}`,
	}
}

func TestLoadTemplateErrorsNameConfigMapAndKey(t *testing.T) {
	parser, _ := LibraryConfigMap(LibraryParserStandard)
	cases := []struct {
		name   string
		change func(d map[string]string)
		parser *corev1.ConfigMap
		want   string
	}{
		{"a missing engine is rejected", func(d map[string]string) { delete(d, KeyInferenceEngine) }, nil, "data[inference-engine]: missing"},
		{"an unknown engine is rejected", func(d map[string]string) { d[KeyInferenceEngine] = "sglang" }, nil, `data[inference-engine]: "sglang" is not an inference engine`},
		{"a bad level is rejected", func(d map[string]string) { d[KeyLevel] = "node" }, nil, `data[ranktable-level]: "node" is not a ranktable level`},
		{"a relative mount path is rejected", func(d map[string]string) { d[KeyMountPath] = "etc/x" }, nil, "data[mount-path]"},
		{"a file name with a slash is rejected", func(d map[string]string) { d[KeyFilename] = "a/b.json" }, nil, "data[filename]"},
		{"a bad annotation name is rejected", func(d map[string]string) { d[KeyAnnotationName] = "a b" }, nil, "data[annotation-name]"},
		{"an empty ranktable template is rejected", func(d map[string]string) { d[KeyRanktableTemplate] = " \n" }, nil, "data[ranktable-template]: missing or empty"},
		{"an unparsable ranktable template is rejected", func(d map[string]string) { d[KeyRanktableTemplate] = "{{ .X" }, nil, "data[ranktable-template]: template:"},
		{"a template calling env fails to load", func(d map[string]string) { d[KeyRanktableTemplate] = `{{ env "HOME" }}` }, nil, `function "env" is not available: it reads the environment`},
		{"a template calling expandenv fails to load", func(d map[string]string) { d[KeyRanktableTemplate] = `{{ expandenv "$HOME" }}` }, nil, `function "expandenv" is not available: it reads the environment`},
		{"a template calling now fails to load", func(d map[string]string) { d[KeyRanktableTemplate] = `{{ now }}` }, nil, `function "now" is not available: it reads the clock`},
		{"a template calling randAlpha fails to load", func(d map[string]string) { d[KeyRanktableTemplate] = `{{ randAlpha 3 }}` }, nil, `function "randAlpha" is not available: it is random`},
		{"an unknown builtin parser is rejected", func(d map[string]string) { d[KeyPodParserTemplate] = "builtin:xml" }, nil, `data[pod-parser-template]: "builtin:xml" is not a built-in parser`},
		{"a missing parser ConfigMap is reported", func(d map[string]string) { d[KeyPodParserTemplate] = "p" }, nil, `data[pod-parser-template]: parser ConfigMap "p" not given`},
		{"a parser ConfigMap of another name is rejected", func(d map[string]string) { d[KeyPodParserTemplate] = "p" }, parser, `names "p" but parser ConfigMap kthena-system/ascend-pod-ranktable-parser-standard`},
		{"a parser ConfigMap without its template is rejected", func(d map[string]string) { d[KeyPodParserTemplate] = "p" },
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Data: map[string]string{"parser": "x"}}, "pod parser ConfigMap ns/p: data[parser-template]: missing or empty"},
		{"an unparsable parser template is rejected", func(d map[string]string) { d[KeyPodParserTemplate] = "p" },
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Data: map[string]string{KeyParserTemplate: "{{ if }}"}}, "pod parser ConfigMap ns/p: data[parser-template]:"},
		{"a parser template calling env fails to load", func(d map[string]string) { d[KeyPodParserTemplate] = "p" },
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Data: map[string]string{KeyParserTemplate: `{{ env "X" }}`}}, `function "env" is not available: it reads the environment`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := validRTData()
			c.change(d)
			_, err := LoadTemplate(rtCM(d), c.parser, LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestLoadTemplateDefaults(t *testing.T) {
	d := validRTData()
	delete(d, KeyPodParserTemplate)
	tm, err := LoadTemplate(rtCM(d), nil, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tm.MountPath != DefaultMountPath || tm.Filename != DefaultFilename || tm.AnnotationName != DefaultAnnotationName || tm.ParserName != BuiltinRanktableJSON {
		t.Errorf("defaults not applied: %+v", tm)
	}
}

func TestExplodingTemplateFailsFastWithTheSizeError(t *testing.T) {
	cases := map[string]string{
		"until builds a huge list":               `{{ range until 100000000 }}x{{ end }}`,
		"a modest until prints past the cap":     `{{ range until 60000 }}{{ repeat 100 "x" }}{{ end }}`,
		"repeat builds a huge string":            `{{ repeat 100000000 "x" }}`,
		"indent builds a huge string":            `{{ indent 100000000 "x" }}`,
		"seq builds a huge string":               `{{ seq 100000000 }}`,
		"untilStep builds a huge list":           `{{ range untilStep 0 100000000 1 }}x{{ end }}`,
		"nested ranges print past the cap":       `{{ range until 2000 }}{{ range until 2000 }}xx{{ end }}{{ end }}`,
		"the output is not valid JSON and large": `{{ range until 50000 }}{{ repeat 30 "y" }}{{ end }}`,
	}
	o := testOwner("qwen-inference")
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			d := validRTData()
			d[KeyRanktableTemplate] = text
			tm, err := LoadTemplate(rtCM(d), nil, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			res, err := Plan(Input{Owner: o, Template: tm, Pods: designPods(o), Grouping: designGrouping, Now: t0})
			elapsed := time.Since(start)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			g := res.Groups[0]
			if g.Phase != PhaseFailed || !errors.Is(g.Error, ErrOutputTooLarge) {
				t.Fatalf("phase %s error %v, want Failed with ErrOutputTooLarge", g.Phase, g.Error)
			}
			if elapsed > 5*time.Second {
				t.Errorf("took %s", elapsed)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
		})
	}
}

// TestTheBudgetIsTheEngines: the package's defaults and error variables are the
// template engine's, and fromJson reads at most an annotation's worth.
func TestTheBudgetIsTheEngines(t *testing.T) {
	if DefaultMaxTemplateWork != tmpl.DefaultMaxWork || DefaultMaxTemplateValueBytes != tmpl.DefaultMaxValueBytes {
		t.Errorf("defaults %d and %d, the engine's %d and %d", DefaultMaxTemplateWork, DefaultMaxTemplateValueBytes, tmpl.DefaultMaxWork, tmpl.DefaultMaxValueBytes)
	}
	if ErrBudgetExceeded != tmpl.ErrBudgetExceeded || ErrOutputTooLarge != tmpl.ErrOutputTooLarge {
		t.Error("the error variables are not the engine's")
	}
	if tmpl.MaxFromJSONBytes != apivalidation.TotalAnnotationSizeLimitB {
		t.Errorf("fromJson reads %d bytes, annotations have %d", tmpl.MaxFromJSONBytes, apivalidation.TotalAnnotationSizeLimitB)
	}
}

func TestTemplateCache(t *testing.T) {
	var c TemplateCache
	d := validRTData()
	a, err := c.Load(rtCM(d), nil, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Load(rtCM(d), nil, LoadOptions{})
	if a != b {
		t.Error("the same UID and resourceVersion loaded twice")
	}
	cm := rtCM(d)
	cm.ResourceVersion = "2"
	cm.Data[KeyRanktableTemplate] = `{"m": 1}`
	c2, _ := c.Load(cm, nil, LoadOptions{})
	if c2 == a || c2.Text != `{"m": 1}` {
		t.Error("a new resourceVersion did not reload")
	}
	// The cache holds the newest version per ConfigMap only: loading the old one again
	// parses it again, and then the new one again.
	if x, _ := c.Load(rtCM(d), nil, LoadOptions{}); x == a {
		t.Error("the old version was still cached beside the new one")
	}
	c2, _ = c.Load(cm, nil, LoadOptions{})
	done := make(chan *Template, 8)
	for i := 0; i < 8; i++ {
		go func() { x, _ := c.Load(cm, nil, LoadOptions{}); done <- x }()
	}
	for i := 0; i < 8; i++ {
		if x := <-done; x != c2 {
			t.Error("a concurrent load returned another template")
		}
	}
	c.Forget(cm.UID)
	if x, _ := c.Load(cm, nil, LoadOptions{}); x == c2 {
		t.Error("Forget kept the entry")
	}
}
