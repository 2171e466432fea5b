package ranktable

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// buildCPU returns the least CPU time of up to runs Builds of ms, stopping early once
// a run is under stopBelow.
func buildCPU(t *testing.T, ms []Member, runs int, stopBelow time.Duration) time.Duration {
	t.Helper()
	best := time.Duration(1<<63 - 1)
	for range runs {
		start := cpuTime()
		if _, err := Build(ms, BuildOptions{}); err != nil {
			t.Fatal(err)
		}
		best = min(best, cpuTime()-start)
		if best < stopBelow {
			break
		}
	}
	return best
}

// Eight times the pods on one server must cost about eight times as much, not 64
// times (the duplicate-device check once compared every device with every device of
// the server: 1024 pods x 64 devices took seconds).
func TestBuildDuplicateDeviceCheckIsLinearOnOneServer(t *testing.T) {
	if testing.Short() {
		t.Skip("measures CPU time")
	}
	small := buildCPU(t, oneServerMembers(128, 64), 5, 0)
	large := buildCPU(t, oneServerMembers(1024, 64), 3, 24*small)
	if ratio := float64(large) / float64(small); ratio > 24 {
		t.Errorf("1024 pods took %v, 128 pods %v: %.0fx for 8x the pods (quadratic is 64x)", large, small, ratio)
	}
}

// Out-of-range options and nil arguments are errors that name what is wrong, never
// panics.
func TestBadArgumentsAreErrorsNotPanics(t *testing.T) {
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	var nilTemplate *Template
	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"Build with an unknown Order", func() error {
			_, err := Build(oneServerMembers(1, 1), BuildOptions{Order: "Random"})
			return err
		}, `BuildOptions.Order: "Random" is not an order (want Natural, Lexicographic or PodIndex)`},
		{"Build with a lower-case Order", func() error {
			_, err := Build(nil, BuildOptions{Order: "natural"})
			return err
		}, `BuildOptions.Order: "natural" is not an order (want Natural, Lexicographic or PodIndex)`},
		{"ParsePod(nil)", func() error { _, err := tm.ParsePod(nil); return err }, "pod is nil"},
		{"ParsePod on a nil Template", func() error { _, err := nilTemplate.ParsePod(nil); return err }, "template is nil"},
		{"ParseAnnotation on a nil Template", func() error { _, err := nilTemplate.ParseAnnotation("{}"); return err }, "template is nil"},
		{"Render(nil)", func() error { _, err := tm.Render(nil, RenderOptions{}); return err }, "ranktable template " + tm.Name + ": table is nil"},
		{"Render on a nil Template", func() error { _, err := nilTemplate.Render(&Table{}, RenderOptions{}); return err }, "template is nil"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panic: %v", r)
					}
				}()
				err = c.call()
			}()
			if err == nil || err.Error() != c.want {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// kthenaConfigMaps returns a ranktable template and pod parser ConfigMap pair with
// the data keys kthena's own examples use: the parser names its annotation
// (annotation-name, here Huawei CCE's) and the template carries init container keys
// kplan does not use.
func kthenaConfigMaps(t testing.TB) (rt, parser *corev1.ConfigMap) {
	std, _ := LibraryConfigMap(LibraryParserStandard)
	parser = std.DeepCopy()
	parser.Name = "ascend-pod-ranktable-parser-cce"
	parser.Data[KeyAnnotationName] = "cce.kubectl.kubernetes.io/ascend-1980-configuration"
	role, _ := LibraryConfigMap(LibraryMindIERole)
	rt = role.DeepCopy()
	rt.Name = "ascend-ranktable-template-mindie-role-cce"
	rt.Data[KeyPodParserTemplate] = parser.Name
	rt.Data["init-container-image"] = "busybox:latest"
	rt.Data["init-container-name"] = "wait-ranktable"
	return rt, parser
}

// kthena's parser and template ConfigMaps load as they are: the parser's
// annotation-name is the annotation read, and unknown keys are warnings.
func TestLoadTemplateAcceptsKthenaConfigMapsWithAnnotationNameAndExtraKeys(t *testing.T) {
	rt, parser := kthenaConfigMaps(t)
	rtBefore, parserBefore := rt.DeepCopy(), parser.DeepCopy()
	tm, err := LoadTemplate(rt, parser, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tm.AnnotationName != "cce.kubectl.kubernetes.io/ascend-1980-configuration" {
		t.Errorf("AnnotationName %q", tm.AnnotationName)
	}
	want := []string{
		"ranktable template ConfigMap kthena-system/ascend-ranktable-template-mindie-role-cce: data[init-container-image]: unknown key ignored",
		"ranktable template ConfigMap kthena-system/ascend-ranktable-template-mindie-role-cce: data[init-container-name]: unknown key ignored",
	}
	if len(tm.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %d", tm.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(tm.Warnings[i], w) {
			t.Errorf("warning %d: %q, want %q...", i, tm.Warnings[i], w)
		}
	}
	if !equalCM(rt, rtBefore) || !equalCM(parser, parserBefore) {
		t.Error("LoadTemplate changed its input")
	}

	// The pods carry the CCE annotation, not ascend.com/ranktable.
	o := testOwner("ms")
	var pods []*corev1.Pod
	for k := range 2 {
		p := kthenaPod(o, 0, "worker-0", k, true, 8)
		p.Annotations[tm.AnnotationName] = p.Annotations[DefaultAnnotationName]
		delete(p.Annotations, DefaultAnnotationName)
		pods = append(pods, p)
	}
	res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 || res.Groups[0].Phase != PhaseCompleted {
		t.Fatalf("groups %+v", res.Groups)
	}
	if _, err := tm.ParsePod(pods[0]); err != nil {
		t.Errorf("ParsePod: %v", err)
	}

	t.Run("an unknown key of the parser ConfigMap is a warning", func(t *testing.T) {
		rt, parser := kthenaConfigMaps(t)
		parser.Data["parser-type"] = "cce"
		tm, err := LoadTemplate(rt, parser, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if w := tm.Warnings[len(tm.Warnings)-1]; !strings.HasPrefix(w, "pod parser ConfigMap kthena-system/ascend-pod-ranktable-parser-cce: data[parser-type]: unknown key ignored") {
			t.Errorf("last warning %q", w)
		}
	})
	t.Run("different annotations named in both ConfigMaps are an error", func(t *testing.T) {
		rt, parser := kthenaConfigMaps(t)
		rt.Data[KeyAnnotationName] = "ascend.com/ranktable"
		_, err := LoadTemplate(rt, parser, LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), `data[annotation-name]: "cce.kubectl.kubernetes.io/ascend-1980-configuration" differs from "ascend.com/ranktable"`) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("a bad annotation name in the parser ConfigMap is an error", func(t *testing.T) {
		rt, parser := kthenaConfigMaps(t)
		parser.Data[KeyAnnotationName] = "a b"
		_, err := LoadTemplate(rt, parser, LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), `pod parser ConfigMap kthena-system/ascend-pod-ranktable-parser-cce: data[annotation-name]: "a b" is not a qualified annotation name`) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("library templates load without warnings", func(t *testing.T) {
		for _, cm := range LibraryConfigMaps() {
			if cm.Name == LibraryParserStandard {
				continue
			}
			name := cm.Name
			tm, err := LoadLibraryTemplate(name, LoadOptions{})
			if err != nil {
				t.Errorf("%s: %v", name, err)
			} else if len(tm.Warnings) > 0 {
				t.Errorf("%s: warnings %q", name, tm.Warnings)
			}
		}
	})
}

func equalCM(a, b *corev1.ConfigMap) bool {
	if a.Name != b.Name || len(a.Data) != len(b.Data) {
		return false
	}
	for k, v := range a.Data {
		if b.Data[k] != v {
			return false
		}
	}
	return true
}
