package ranktable

import (
	"bytes"
	"encoding/json"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

const devicePluginSample = `{"pod_name":"qwen-0","server_id":"2b7c-uid","host_ip":"192.168.1.10","super_pod_id":0,"server_index":"3","devices":[{"device_id":"0","device_ip":"10.20.0.2","super_device_id":"37748736"},{"device_id":"1","device_ip":"10.20.0.3","super_device_id":37748737}]}`

func checkParsed(t *testing.T, d PodData, err error) {
	t.Helper()
	if err != nil {
		return
	}
	if verr := validatePodData(&d); verr != nil {
		t.Fatalf("accepted data fails validation: %v", verr)
	}
	// Whatever is accepted renders as valid JSON through every library template.
	table, berr := Build([]Member{{Pod: "ns/p", Data: d, RankIndex: -1}}, BuildOptions{})
	if berr != nil {
		t.Fatalf("accepted data does not build: %v", berr)
	}
	for _, tm := range fuzzTemplates {
		if _, rerr := tm.Render(table, RenderOptions{}); rerr != nil {
			t.Fatalf("%s: %v", tm.Name, rerr)
		}
	}
}

var fuzzTemplates = func() []*Template {
	var out []*Template
	for _, cm := range LibraryConfigMaps() {
		if cm.Data[KeyRanktableTemplate] != "" {
			tm, err := LoadLibraryTemplate(cm.Name, LoadOptions{})
			if err != nil {
				panic(err)
			}
			out = append(out, withoutNative(tm))
		}
	}
	return out
}()

func FuzzBuiltinRanktableJSON(f *testing.F) {
	f.Add(designAnnotation("qwen-0", "192.168.1.10", "10.20.0.2", "10.20.0.3"))
	f.Add(`{"pod_name":"x","server_id":"a\"b","devices":[{"device_id":"0","device_ip":"1.2.3.4"}]}`)
	f.Add(`{"server_id":"s","devices":[{"device_id":"01","device_ip":"-1"}]}`)
	f.Add(`{"server_id":"s","devices":[{"device_id":"0","device_ip":"1.2.3.4\",\"x\":\"y"}]}`)
	f.Add(`{"pod_name":"x","pod_name":"y","server_id":"s","devices":[]}`)
	f.Add(`{"POD_NAME":"x","server_id":"s","devices":[{"device_id":"0","device_ip":"1.2.3.4","device_ip":"1.2.3.5"}]}`)
	f.Add(" {\t\"server_id\" : \"s\" ,\n\"devices\":[ {} , {\"device_id\":\"1\"}]}\r\n")
	f.Add(`{"server_id":"s","devices":[{"device_id":"0","device_ip":"1.2.3.4"}]} x`)
	f.Add(`{"server_id":"s","devices":null}`)
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseChecked(builtinJSON{}, s, podInfo{}, new([]byte))
		checkParsed(t, d, err)
		// The fast path agrees with encoding/json wherever it answers.
		if fast, ok := fastRanktableJSON(s); ok {
			slow, err := decodeRanktableJSON(s)
			if err != nil {
				t.Fatalf("fast path accepted what encoding/json rejects: %v", err)
			}
			if diff := cmp.Diff(slow, fast); diff != "" {
				t.Fatalf("fast path differs from encoding/json (-json +fast):\n%s", diff)
			}
		}
	})
}

func FuzzBuiltinAscendDevicePlugin(f *testing.F) {
	f.Add(devicePluginSample)
	f.Add(`{"server_id":"s","super_pod_id":"x","devices":[{"device_id":0,"device_ip":"::1"}]}`)
	f.Add(`{"server_id":"s","devices":[{"device_id":1e9,"device_ip":"1.2.3.4"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseChecked(builtinDevicePlugin{}, s, podInfo{}, new([]byte))
		checkParsed(t, d, err)
	})
}

// FuzzParserTemplate runs the standard parser template on the annotation.
func FuzzParserTemplate(f *testing.F) {
	cm, _ := LibraryConfigMap(LibraryParserStandard)
	p, err := loadParserTemplate(cm, LoadOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(designAnnotation("qwen-0", "192.168.1.10", "10.20.0.2", "10.20.0.3"))
	f.Add(`{"pod_name":"x","server_id":"a\nb: c","devices":[]}`)
	f.Add(`{"server_id":"s","devices":[{"device_id":"0","device_ip":"1.2.3.4\"\n  extra: 1"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseChecked(p, s, podInfo{ip: "10.0.0.1", node: "node-1", name: "p", namespace: "ns"}, new([]byte))
		checkParsed(t, d, err)
	})
}

// FuzzDecodeParserOutput checks the fast path against the YAML decoder: whatever the
// fast path accepts, the YAML decoder decodes to the same value.
func FuzzDecodeParserOutput(f *testing.F) {
	f.Add([]byte("podName: \"a\"\nserverId: \"s\"\ndevices:\n  - deviceId: \"0\"\n    deviceIp: \"1.2.3.4\"\n"))
	f.Add([]byte("podName: \"a\"\nserverId: \"s\"\ndevices:\n- deviceId: \"0\"\n  deviceIp: \"1.2.3.4\"\n  superDeviceId: \"7\"\n"))
	f.Add([]byte("podName: \"a#b\"\nserverId: \"s: t\"\ndevices:\n  - deviceId: \"0\"\n"))
	f.Add([]byte("serverId: s\ndevices: []\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := fastDecode(b)
		d, err := decodeParserOutput(b)
		if !ok {
			return
		}
		var slow PodData
		if yerr := yaml.UnmarshalStrict(bytes.Clone(b), &slow); yerr != nil {
			t.Fatalf("fast path accepted what YAML rejects: %v\n%q", yerr, b)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("fast path differs from YAML for %q (-yaml +fast):\n%s", b, diff)
		}
		if err != nil {
			t.Fatalf("decodeParserOutput: %v", err)
		}
		if diff := cmp.Diff(fast, d); diff != "" {
			t.Fatalf("decodeParserOutput differs from the fast path for %q (-fast +decoded):\n%s", b, diff)
		}
	})
}

// FuzzLoadTemplate loads arbitrary template texts and data; loading must not panic and
// a loaded template renders the design scenario without panicking, within the cap.
func FuzzLoadTemplate(f *testing.F) {
	f.Add("mindie", "role", designTemplateText, "builtin:ranktable-json", "/etc/ascend/ranktable", "ranktable.json")
	f.Add("vllm-ascend", "group", `{{ toJson . }}`, "builtin:ascend-device-plugin", "/x", "t.json")
	f.Add("mindie", "role", `{{ range until 100000000 }}x{{ end }}`, "", "", "")
	f.Add("mindie", "rack", `{{ env "X" }}`, "builtin:yaml", "rel", "a/b")
	o := testOwner("qwen-inference")
	pods := designPods(o)
	f.Fuzz(func(t *testing.T, engine, level, text, parserName, mount, file string) {
		data := map[string]string{KeyInferenceEngine: engine, KeyLevel: level, KeyRanktableTemplate: text,
			KeyPodParserTemplate: parserName, KeyMountPath: mount, KeyFilename: file}
		for k, v := range data {
			if v == "" {
				delete(data, k)
			}
		}
		tm, err := LoadTemplate(rtCM(data), nil, LoadOptions{})
		if err != nil {
			return
		}
		res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Grouping: designGrouping, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range res.ConfigMaps {
			c := d.ConfigMap.Data[tm.Filename]
			if len(c) > DefaultMaxOutputBytes || (c != "" && !json.Valid([]byte(c))) {
				t.Fatalf("bad output of %d bytes", len(c))
			}
		}
	})
}

// FuzzPlan builds tables from two arbitrary annotations, with Plan and with a Planner
// that saw other annotations before.
func FuzzPlan(f *testing.F) {
	f.Add(designAnnotation("a", "192.168.1.10", "10.0.0.1"), designAnnotation("b", "192.168.1.10", "10.0.0.2"))
	f.Add(designAnnotation("a", "s", "10.0.0.1"), `{"server_id":"s","devices":[{"device_id":"0","device_ip":"10.0.0.9"}]}`)
	o := testOwner("qwen-inference")
	tm, _ := LoadLibraryTemplate(LibraryMindIERole, LoadOptions{})
	f.Fuzz(func(t *testing.T, a, b string) {
		pods := designPods(o)
		// A Planner that saw the design's annotations, then the fuzzed ones.
		p := NewPlanner()
		if _, err := p.Plan(Input{Owner: o, Template: tm, Pods: pods, Grouping: designGrouping, Now: t0}); err != nil {
			t.Fatal(err)
		}
		pods[0].Annotations[DefaultAnnotationName] = a
		pods[1].Annotations[DefaultAnnotationName] = b
		in := Input{Owner: o, Template: tm, Pods: []*corev1.Pod{pods[0], pods[1]}, Grouping: designGrouping, Now: t0}
		res, err := Plan(in)
		if err != nil {
			t.Fatal(err)
		}
		if warm, err := p.Plan(in); err != nil || !resultsEqual(warm, res) {
			t.Fatalf("Planner after a change differs from Plan (%v)", err)
		}
		g := res.Groups[0]
		if g.Phase == PhaseCompleted {
			var v struct {
				ServerList []struct {
					Device []struct {
						RankID string `json:"rank_id"`
					} `json:"device"`
				} `json:"server_list"`
			}
			if err := json.Unmarshal([]byte(res.ConfigMaps[0].ConfigMap.Data["ranktable.json"]), &v); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, s := range v.ServerList {
				for _, d := range s.Device {
					if d.RankID != itoa(n) {
						t.Fatalf("rank %s at %d", d.RankID, n)
					}
					n++
				}
			}
		} else if g.Error == nil && g.Phase == PhaseFailed {
			t.Fatal("failed without an error")
		}
	})
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// FuzzLoadParserTemplate loads arbitrary parser template texts; loading must not panic,
// and a loaded parser run on the design's annotation (with pod values bound) either
// fails or yields data that passes validation, within the output cap.
func FuzzLoadParserTemplate(f *testing.F) {
	std, _ := LibraryConfigMap(LibraryParserStandard)
	f.Add(std.Data[KeyParserTemplate])
	f.Add("serverId: {{ nodeName | quote }}\npodName: {{ podName }}\ndevices:\n  - deviceId: \"0\"\n    deviceIp: {{ podIP | quote }}\n")
	f.Add(`{{ range until 100000000 }}x{{ end }}`)
	f.Add(`{{ env "HOME" }}`)
	f.Add("{{ template \"x\" }}{{ define \"x\" }}serverId: s{{ end }}")
	ann := designAnnotation("qwen-0", "192.168.1.10", "10.20.0.2", "10.20.0.3")
	f.Fuzz(func(t *testing.T, text string) {
		cm := &corev1.ConfigMap{Data: map[string]string{KeyParserTemplate: text}}
		cm.Name, cm.Namespace = "p", "kthena-system"
		p, err := loadParserTemplate(cm, LoadOptions{})
		if err != nil {
			return
		}
		d, err := parseChecked(p, ann, podInfo{ip: "172.16.0.1", node: "node-1", name: "qwen-0", namespace: "default"}, new([]byte))
		checkParsed(t, d, err)
	})
}
