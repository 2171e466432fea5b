package ranktable

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/kplan-dev/kplan/internal/tmpl"
	corev1 "k8s.io/api/core/v1"
)

// Data keys of a ranktable template ConfigMap.
const (
	KeyInferenceEngine   = "inference-engine"
	KeyLevel             = "ranktable-level"
	KeyPodParserTemplate = "pod-parser-template"
	KeyRanktableTemplate = "ranktable-template"
	KeyMountPath         = "mount-path"
	KeyFilename          = "filename"
	KeyAnnotationName    = "annotation-name"
)

// KeyParserTemplate is the data key of a pod parser template ConfigMap's template. The
// parser ConfigMap may also hold KeyAnnotationName.
const KeyParserTemplate = "parser-template"

// Defaults of a ranktable template ConfigMap's optional keys.
const (
	DefaultMountPath      = "/etc/ascend/ranktable"
	DefaultFilename       = "ranktable.json"
	DefaultAnnotationName = "ascend.com/ranktable"
)

// Built-in parsers, selected by naming them in the pod-parser-template key.
const (
	// BuiltinRanktableJSON decodes the design's annotation
	// {"pod_name","server_id","devices":[{"device_id","device_ip"}]}.
	BuiltinRanktableJSON = "builtin:ranktable-json"
	// BuiltinAscendDevicePlugin decodes Huawei's device plugin annotation
	// (ascend.kubectl.kubernetes.io/ascend-910-configuration), which adds host_ip,
	// super_pod_id, server_index and per-device super_device_id.
	BuiltinAscendDevicePlugin = "builtin:ascend-device-plugin"
)

// Engine is the inference engine a table is for; it picks the env var injected into
// the main containers.
type Engine string

// Engines.
const (
	EngineMindIE      Engine = "mindie"
	EngineVLLMAscend  Engine = "vllm-ascend"
	envMindIE                = "RANKTABLEFILE"
	envVLLMAscendPD          = "DISAGGREGATED_PREFILL_RANK_TABLE_PATH"
	maxTemplateSource        = 256 << 10
)

// EnvVar returns the env var the engine reads the table's path from.
func (e Engine) EnvVar() string {
	if e == EngineVLLMAscend {
		return envVLLMAscendPD
	}
	return envMindIE
}

// Level says which pods share one table.
type Level string

// Levels.
const (
	// LevelRole builds one table per role replica (serving group + role id).
	LevelRole Level = "role"
	// LevelGroup builds one table per serving group.
	LevelGroup Level = "group"
)

// ParseLevel returns the Level s names, or an error.
func ParseLevel(s string) (Level, error) {
	switch Level(s) {
	case LevelRole, LevelGroup:
		return Level(s), nil
	}
	return "", fmt.Errorf("%q is not a ranktable level (want role or group)", truncate(s, 80))
}

// Template is a loaded, validated pair of ranktable template and pod parser. It is
// immutable and safe for concurrent use.
type Template struct {
	// Name is namespace/name of the ranktable template ConfigMap.
	Name string
	// Engine is the inference engine (key inference-engine).
	Engine Engine
	// Level is role or group (key ranktable-level).
	Level Level
	// ParserName is the pod parser: a ConfigMap name or a builtin: parser (key
	// pod-parser-template).
	ParserName string
	// MountPath is where the table is mounted in the containers (key mount-path).
	MountPath string
	// Filename is the table's file and ConfigMap data key (key filename).
	Filename string
	// AnnotationName is the pod annotation the parser reads: key annotation-name of
	// the pod parser ConfigMap (where kthena has it) or of the ranktable template
	// ConfigMap, else DefaultAnnotationName.
	AnnotationName string
	// Text is the ranktable template source.
	Text string
	// Warnings describe what LoadTemplate ignored, one sentence each naming the
	// ConfigMap and the data key: keys it does not know, such as kthena's
	// init-container-image and init-container-name. A controller may log them or
	// record them as events.
	Warnings []string

	tmpl      *tmpl.Program
	parser    parser
	native    nativeRenderer
	perDevice int // bytes the template writes per device, about
}

// LoadOptions change how templates are loaded.
type LoadOptions struct {
	// MaxTemplateWork caps the work of each execution of the ranktable and parser
	// templates (default DefaultMaxTemplateWork); see the package doc.
	MaxTemplateWork int64
	// MaxTemplateValueBytes caps the bytes of the values each execution's functions
	// build (default DefaultMaxTemplateValueBytes); see the package doc.
	MaxTemplateValueBytes int64
}

// parseTemplate parses a ranktable or parser template (named id) under opts' budget;
// values are the late-bound functions it may call.
func parseTemplate(id, text, missingKey string, opts LoadOptions, values []string) (*tmpl.Program, error) {
	return tmpl.Parse(tmpl.Spec{Name: id, Text: text, MissingKey: missingKey, Values: values,
		Limits: tmpl.Limits{Work: opts.MaxTemplateWork, ValueBytes: opts.MaxTemplateValueBytes,
			WorkName: "MaxTemplateWork", ValueBytesName: "MaxTemplateValueBytes"}})
}

var allowedKeys = map[string]bool{
	KeyInferenceEngine: true, KeyLevel: true, KeyPodParserTemplate: true,
	KeyRanktableTemplate: true, KeyMountPath: true, KeyFilename: true, KeyAnnotationName: true,
}

// LoadTemplate validates a ranktable template ConfigMap and the pod parser ConfigMap it
// names and parses both templates. parserCM may be nil when the ranktable template names
// a built-in parser (or none: the default is BuiltinRanktableJSON). Neither ConfigMap is
// changed. Every error names the ConfigMap and the data key. kthena's ConfigMaps load
// as they are: the parser ConfigMap's annotation-name key names the annotation to
// read (naming a different one in both ConfigMaps is an error), and data keys kplan
// does not know are ignored and reported in Template.Warnings.
func LoadTemplate(rt, parserCM *corev1.ConfigMap, opts LoadOptions) (*Template, error) {
	if rt == nil {
		return nil, fmt.Errorf("ranktable template ConfigMap is nil")
	}
	id := rt.Namespace + "/" + rt.Name
	fail := func(key, format string, args ...any) error {
		return fmt.Errorf("ranktable template ConfigMap %s: data[%s]: %s", id, key, fmt.Sprintf(format, args...))
	}
	t := &Template{
		Name:           id,
		MountPath:      orDefault(rt.Data[KeyMountPath], DefaultMountPath),
		Filename:       orDefault(rt.Data[KeyFilename], DefaultFilename),
		AnnotationName: orDefault(rt.Data[KeyAnnotationName], DefaultAnnotationName),
		ParserName:     orDefault(rt.Data[KeyPodParserTemplate], BuiltinRanktableJSON),
		Text:           rt.Data[KeyRanktableTemplate],
	}
	switch e := Engine(rt.Data[KeyInferenceEngine]); e {
	case EngineMindIE, EngineVLLMAscend:
		t.Engine = e
	case "":
		return nil, fail(KeyInferenceEngine, "missing (want mindie or vllm-ascend)")
	default:
		return nil, fail(KeyInferenceEngine, "%q is not an inference engine (want mindie or vllm-ascend)", string(e))
	}
	lv, err := ParseLevel(rt.Data[KeyLevel])
	if err != nil {
		return nil, fail(KeyLevel, "%v", err)
	}
	t.Level = lv
	if !path.IsAbs(t.MountPath) || path.Clean(t.MountPath) != t.MountPath || strings.ContainsAny(t.MountPath, ":\n") {
		return nil, fail(KeyMountPath, "%q is not a clean absolute path", t.MountPath)
	}
	if t.Filename == "." || t.Filename == ".." || strings.ContainsAny(t.Filename, "/\n") || !isConfigMapKey(t.Filename) {
		return nil, fail(KeyFilename, "%q is not a valid ConfigMap key and file name", t.Filename)
	}
	if !isQualifiedName(t.AnnotationName) {
		return nil, fail(KeyAnnotationName, "%q is not a qualified annotation name", t.AnnotationName)
	}
	if strings.TrimSpace(t.Text) == "" {
		return nil, fail(KeyRanktableTemplate, "missing or empty")
	}
	if len(t.Text) > maxTemplateSource {
		return nil, fail(KeyRanktableTemplate, "%d bytes exceeds the limit of %d", len(t.Text), maxTemplateSource)
	}
	t.tmpl, err = parseTemplate(id, t.Text, "error", opts, nil)
	if err != nil {
		return nil, fail(KeyRanktableTemplate, "%v", err)
	}
	t.native, t.perDevice = nativeFor(t.Text)
	t.Warnings = unknownKeys(nil, "ranktable template ConfigMap "+id, rt.Data, allowedKeys)
	t.parser, err = loadParser(id, t.ParserName, parserCM, opts)
	if err != nil {
		return nil, err
	}
	if _, ok := t.parser.(*templateParser); ok {
		// kthena names the annotation in the parser ConfigMap.
		pid := parserCM.Namespace + "/" + parserCM.Name
		if a := parserCM.Data[KeyAnnotationName]; a != "" {
			if !isQualifiedName(a) {
				return nil, fmt.Errorf("pod parser ConfigMap %s: data[%s]: %q is not a qualified annotation name", pid, KeyAnnotationName, a)
			}
			if rtA := rt.Data[KeyAnnotationName]; rtA != "" && rtA != a {
				return nil, fmt.Errorf("pod parser ConfigMap %s: data[%s]: %q differs from %q in ranktable template ConfigMap %s: name the annotation in one of them",
					pid, KeyAnnotationName, a, rtA, id)
			}
			t.AnnotationName = a
		}
		t.Warnings = unknownKeys(t.Warnings, "pod parser ConfigMap "+pid, parserCM.Data, allowedParserKeys)
	}
	return t, nil
}

var allowedParserKeys = map[string]bool{KeyParserTemplate: true, KeyAnnotationName: true}

// unknownKeys appends to warnings one sentence for each key of data (in order) that
// allowed does not list.
func unknownKeys(warnings []string, what string, data map[string]string, allowed map[string]bool) []string {
	var unknown []string
	for k := range data {
		if !allowed[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		warnings = append(warnings, fmt.Sprintf("%s: data[%s]: unknown key ignored (known: %s)", what, truncate(k, 80), strings.Join(sortedKeys(allowed), ", ")))
	}
	return warnings
}

// ParserConfigMapName returns the name of the pod parser ConfigMap the ranktable
// template ConfigMap rt names (key pod-parser-template), which [LoadTemplate] needs
// beside rt and which lives in rt's namespace; or "" when rt names a built-in parser
// (or none, which means [BuiltinRanktableJSON]) and needs no parser ConfigMap. A nil rt
// names none.
func ParserConfigMapName(rt *corev1.ConfigMap) string {
	if rt == nil {
		return ""
	}
	name := rt.Data[KeyPodParserTemplate]
	if name == "" || strings.HasPrefix(name, builtinPrefix) {
		return ""
	}
	return name
}

// builtinPrefix starts the names of built-in parsers.
const builtinPrefix = "builtin:"

// loadParser resolves the pod-parser-template reference of ranktable template rtID.
func loadParser(rtID, name string, cm *corev1.ConfigMap, opts LoadOptions) (parser, error) {
	switch name {
	case BuiltinRanktableJSON:
		return builtinJSON{}, nil
	case BuiltinAscendDevicePlugin:
		return builtinDevicePlugin{}, nil
	}
	if strings.HasPrefix(name, builtinPrefix) {
		return nil, fmt.Errorf("ranktable template ConfigMap %s: data[%s]: %q is not a built-in parser (want %s or %s)",
			rtID, KeyPodParserTemplate, name, BuiltinRanktableJSON, BuiltinAscendDevicePlugin)
	}
	if cm == nil {
		return nil, fmt.Errorf("ranktable template ConfigMap %s: data[%s]: parser ConfigMap %q not given", rtID, KeyPodParserTemplate, name)
	}
	if cm.Name != name {
		return nil, fmt.Errorf("ranktable template ConfigMap %s: data[%s]: names %q but parser ConfigMap %s/%s was given",
			rtID, KeyPodParserTemplate, name, cm.Namespace, cm.Name)
	}
	return loadParserTemplate(cm, opts)
}

func loadParserTemplate(cm *corev1.ConfigMap, opts LoadOptions) (parser, error) {
	id := cm.Namespace + "/" + cm.Name
	text := cm.Data[KeyParserTemplate]
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("pod parser ConfigMap %s: data[%s]: missing or empty", id, KeyParserTemplate)
	}
	if len(text) > maxTemplateSource {
		return nil, fmt.Errorf("pod parser ConfigMap %s: data[%s]: %d bytes exceeds the limit of %d", id, KeyParserTemplate, len(text), maxTemplateSource)
	}
	t, err := parseTemplate(id, text, "zero", opts, podValues)
	if err != nil {
		return nil, fmt.Errorf("pod parser ConfigMap %s: data[%s]: %v", id, KeyParserTemplate, err)
	}
	return &templateParser{name: id, tmpl: t}, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
