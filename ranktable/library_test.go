package ranktable

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kplan-dev/kplan/internal/podfixture"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
)

// a3Pods returns two device-plugin pods (prefill and decode) of one serving group, 16
// NPUs in total (8 each), on A3 super pod 0 and 1, with device ids listed 8..15 to
// exercise numeric order ("10" after "9").
func a3Pods(o Owner) []*corev1.Pod {
	var pods []*corev1.Pod
	for i, role := range []string{"prefill", "decode"} {
		name := fmt.Sprintf("%s-0-%s-0-0", o.Name, role)
		var devs []string
		for d := 15; d >= 8; d-- {
			devs = append(devs, fmt.Sprintf(`{"device_id":"%d","device_ip":"10.30.%d.%d","super_device_id":"%d"}`, d, i, d, 37748736+16*i+d))
		}
		ann := fmt.Sprintf(`{"pod_name":"%s","server_id":"uid-%s","host_ip":"192.168.2.%d","super_pod_id":"%d","server_index":"%d","devices":[%s]}`,
			name, role, 10+i, i, i, strings.Join(devs, ","))
		pods = append(pods, podfixture.Pod("default", name,
			podfixture.Labels(LabelGroupName, o.Name+"-0", LabelRole, role, LabelRoleID, role+"-0", LabelEntry, "true"),
			podfixture.Owner(o.GVK.GroupVersion().String(), o.GVK.Kind, o.Name, string(o.UID)),
			podfixture.Annotation("ascend.kubectl.kubernetes.io/ascend-910-configuration", ann),
			podfixture.IP(fmt.Sprintf("172.16.0.%d", 10+i)), podfixture.Node(fmt.Sprintf("node-%d", i)),
			podfixture.Created(t0)))
	}
	return pods
}

// TestLibraryGolden renders every library template for the design's 2-server scenario
// and a 16-device A3 scenario (device plugin annotations) at group level.
func TestLibraryGolden(t *testing.T) {
	o := testOwner("qwen-inference")
	for _, cm := range LibraryConfigMaps() {
		if cm.Data[KeyRanktableTemplate] == "" {
			continue
		}
		for _, sc := range []string{"2server", "a3"} {
			t.Run(cm.Name+" renders the "+sc+" scenario", func(t *testing.T) {
				cm := cm.DeepCopy()
				pods := designPods(o)
				cm.Data[KeyLevel] = "role"
				if sc == "a3" {
					pods = a3Pods(o)
					cm.Data[KeyPodParserTemplate] = BuiltinAscendDevicePlugin
					cm.Data[KeyAnnotationName] = "ascend.kubectl.kubernetes.io/ascend-910-configuration"
					cm.Data[KeyLevel] = "group"
				} else if cm.Data[KeyPodParserTemplate] == BuiltinAscendDevicePlugin {
					// The design's annotation through a device-plugin template.
					cm.Data[KeyPodParserTemplate] = BuiltinRanktableJSON
					delete(cm.Data, KeyAnnotationName)
				}
				parser, _ := LibraryConfigMap(LibraryParserStandard)
				for _, native := range []bool{true, false} {
					tm, err := LoadTemplate(cm, parser, LoadOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if !native {
						tm = withoutNative(tm)
					}
					res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Grouping: designGrouping, Now: t0, Timestamp: "fixed"})
					if err != nil {
						t.Fatal(err)
					}
					if len(res.Groups) != 1 || res.Groups[0].Phase != PhaseCompleted {
						t.Fatalf("groups %+v", res.Groups)
					}
					out := res.ConfigMaps[0].ConfigMap.Data[tm.Filename]
					if !json.Valid([]byte(out)) {
						t.Fatalf("invalid JSON:\n%s", out)
					}
					golden(t, fmt.Sprintf("library/%s.%s.json", cm.Name, sc), []byte(out))
				}
			})
		}
	}
}

func TestLibraryA3Content(t *testing.T) {
	o := testOwner("qwen-inference")
	tm := mustLibrary(t, LibraryVLLMPD, LoadOptions{})
	res, _ := Plan(Input{Owner: o, Template: tm, Pods: a3Pods(o), Now: t0})
	var v struct {
		Prefill []map[string]string `json:"prefill_device_list"`
		Decode  []map[string]string `json:"decode_device_list"`
	}
	if err := json.Unmarshal([]byte(res.ConfigMaps[0].ConfigMap.Data["ranktable.json"]), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Prefill) != 8 || len(v.Decode) != 8 {
		t.Fatalf("lists of %d and %d", len(v.Prefill), len(v.Decode))
	}
	for i, d := range append(v.Prefill, v.Decode...) {
		if d["cluster_id"] != fmt.Sprint(i+1) || d["device_id"] != fmt.Sprint(8+i%8) {
			t.Errorf("entry %d: cluster_id %s device_id %s", i, d["cluster_id"], d["device_id"])
		}
	}
	if v.Prefill[0]["server_id"] != "172.16.0.10" {
		t.Errorf("prefill server_id %s, want the pod IP", v.Prefill[0]["server_id"])
	}
}

func TestSecurityRejections(t *testing.T) {
	o := testOwner("qwen-inference")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	cases := []struct{ name, ann, want string }{
		{"a server id crafted to inject JSON keys is rejected",
			`{"server_id":"1.2.3.4\", \"evil\": \"x","devices":[{"device_id":"0","device_ip":"10.0.0.1"}]}`, "server_id:"},
		{"a device IP crafted to inject JSON keys is rejected",
			`{"server_id":"s1","devices":[{"device_id":"0","device_ip":"10.0.0.1\", \"rank_id\": \"99"}]}`, "devices[0].device_ip:"},
		{"a placeholder device IP is rejected", `{"server_id":"s1","devices":[{"device_id":"0","device_ip":"-.-.-.-"}]}`, "is not an IP address"},
		{"a device id that is not an integer is rejected", `{"server_id":"s1","devices":[{"device_id":"x","device_ip":"10.0.0.1"}]}`, "devices[0].device_id:"},
		{"a server id of 64 characters is rejected", `{"server_id":"` + strings.Repeat("a", 64) + `","devices":[{"device_id":"0","device_ip":"10.0.0.1"}]}`, "exceeds the limit of 63"},
		{"a device id twice is rejected", `{"server_id":"s1","devices":[{"device_id":"0","device_ip":"10.0.0.1"},{"device_id":"0","device_ip":"10.0.0.2"}]}`, "repeats devices[0]"},
		{"a 2 MiB annotation is rejected before decoding", `{"server_id":"` + strings.Repeat("a", 2<<20) + `"}`, "bytes exceeds the limit of 262144"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pods := designPods(o)
			pods[1].Annotations[DefaultAnnotationName] = c.ann
			res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Grouping: designGrouping, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			g := res.Groups[0]
			if g.Phase != PhaseFailed || g.Error == nil || !strings.Contains(g.Error.Error(), c.want) ||
				!strings.HasPrefix(g.Error.Error(), "pod default/qwen-inference-worker-1: annotation ascend.com/ranktable: ") {
				t.Fatalf("phase %s error %v, want Failed naming the pod and %q", g.Phase, g.Error, c.want)
			}
			if res.ConfigMaps[0].ConfigMap.Data["ranktable.json"] != "" {
				t.Fatal("a table was written")
			}
		})
	}
	t.Run("two pods on one server with the same device id are rejected", func(t *testing.T) {
		pods := designPods(o)
		pods[1].Annotations[DefaultAnnotationName] = designAnnotation("qwen-inference-worker-1", "192.168.1.10", "10.9.0.1")
		res, _ := Plan(Input{Owner: o, Template: tm, Pods: pods, Grouping: designGrouping, Now: t0})
		if g := res.Groups[0]; g.Phase != PhaseFailed || !strings.Contains(g.Error.Error(), "is also given by pod") {
			t.Fatalf("%s %v", g.Phase, g.Error)
		}
	})
	t.Run("a size error is distinguishable", func(t *testing.T) {
		_, err := tm.ParseAnnotation(strings.Repeat(" ", apivalidation.TotalAnnotationSizeLimitB+1))
		if !errors.Is(err, ErrOutputTooLarge) {
			t.Fatal(err)
		}
	})
}
