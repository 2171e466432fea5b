package ranktable

import (
	"embed"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Names of the library ConfigMaps.
const (
	LibraryMindIERole     = "ascend-ranktable-template-mindie-role"
	LibraryVLLMGroup      = "ascend-ranktable-template-vllm-group"
	LibraryMindIESimple   = "ascend-ranktable-template-mindie-simple"
	LibraryMindIEExtended = "ascend-ranktable-template-mindie-extended"
	LibraryHCCLv12        = "ascend-ranktable-template-hccl-v1.2"
	LibraryVLLMPD         = "ascend-ranktable-template-vllm-pd"
	LibraryParserStandard = "ascend-pod-ranktable-parser-standard"
	libraryDir            = "library"
)

// DefaultTemplateNamespace is where the library ConfigMaps live and where kthena looks
// for templates.
const DefaultTemplateNamespace = "kthena-system"

//go:embed library/*.yaml
var libraryFS embed.FS

// library holds the decoded library ConfigMaps by name; it is built once and never
// changed (callers get deep copies).
var library = loadLibrary()

var (
	designTemplateText   = library[LibraryMindIERole].Data[KeyRanktableTemplate]
	simpleTemplateText   = library[LibraryMindIESimple].Data[KeyRanktableTemplate]
	extendedTemplateText = library[LibraryMindIEExtended].Data[KeyRanktableTemplate]
	hcclTemplateText     = library[LibraryHCCLv12].Data[KeyRanktableTemplate]
	pdTemplateText       = library[LibraryVLLMPD].Data[KeyRanktableTemplate]
)

func loadLibrary() map[string]*corev1.ConfigMap {
	entries, err := libraryFS.ReadDir(libraryDir)
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	out := map[string]*corev1.ConfigMap{}
	for _, e := range entries {
		b, err := libraryFS.ReadFile(libraryDir + "/" + e.Name())
		if err != nil {
			panic(err)
		}
		cm := &corev1.ConfigMap{}
		if err := yaml.UnmarshalStrict(b, cm); err != nil {
			panic(fmt.Sprintf("ranktable: library file %s: %v", e.Name(), err))
		}
		out[cm.Name] = cm
	}
	return out
}

// LibraryConfigMaps returns deep copies of every library ConfigMap (ranktable
// templates and the standard parser), sorted by name. The same objects are in the
// package's library/ directory as YAML for kubectl apply.
func LibraryConfigMaps() []*corev1.ConfigMap {
	names := make([]string, 0, len(library))
	for n := range library {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*corev1.ConfigMap, len(names))
	for i, n := range names {
		out[i] = library[n].DeepCopy()
	}
	return out
}

// LibraryConfigMap returns a deep copy of the library ConfigMap with the given name.
func LibraryConfigMap(name string) (*corev1.ConfigMap, bool) {
	cm, ok := library[name]
	if !ok {
		return nil, false
	}
	return cm.DeepCopy(), true
}

// LoadLibraryTemplate loads a library ranktable template together with the parser it
// names.
func LoadLibraryTemplate(name string, opts LoadOptions) (*Template, error) {
	rt, ok := library[name]
	if !ok || rt.Data[KeyRanktableTemplate] == "" {
		return nil, fmt.Errorf("no library ranktable template %q", name)
	}
	var parserCM *corev1.ConfigMap
	if p, ok := library[rt.Data[KeyPodParserTemplate]]; ok {
		parserCM = p
	}
	return LoadTemplate(rt, parserCM, opts)
}
