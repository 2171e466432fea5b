package ranktable

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestParserTemplatePodFunctions: a parser template reads the pod's node name, IP,
// name and namespace; the Planner re-parses a pod whose node changed.
func TestParserTemplatePodFunctions(t *testing.T) {
	parser := &corev1.ConfigMap{}
	parser.Name, parser.Namespace = "node-parser", "kthena-system"
	parser.Data = map[string]string{KeyParserTemplate: `{{- $data := . | fromJson -}}
podName: {{ podName | quote }}
serverId: {{ nodeName | quote }}
hostIp: {{ podIP | quote }}
devices:
{{- range $data.devices }}
  - deviceId: {{ .device_id | quote }}
    deviceIp: {{ .device_ip | quote }}
{{- end }}
`}
	rt, _ := LibraryConfigMap(LibraryHCCLv12)
	rt.Data[KeyPodParserTemplate] = "node-parser"
	delete(rt.Data, KeyAnnotationName)
	tm, err := LoadTemplate(rt, parser, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := testOwner("qwen-inference")
	pods := designPods(o)
	for i, p := range pods {
		p.Spec.NodeName = fmt.Sprintf("node-%d", i)
		p.Status.PodIP = fmt.Sprintf("172.16.0.%d", i+1)
	}
	d, err := tm.ParsePod(pods[1])
	if err != nil || d.ServerID != "node-1" || d.HostIP != "172.16.0.2" || d.PodName != "qwen-inference-worker-1" {
		t.Fatalf("ParsePod: %+v %v", d, err)
	}
	// Concurrent parses each see their own pod.
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			q := pods[i%2].DeepCopy()
			q.Spec.NodeName = fmt.Sprintf("node-c%d", i)
			d, err := tm.ParsePod(q)
			if err == nil && d.ServerID != q.Spec.NodeName {
				err = fmt.Errorf("pod on %s parsed as %s", q.Spec.NodeName, d.ServerID)
			}
			errs <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tm.ParseAnnotation(pods[1].Annotations[DefaultAnnotationName]); err == nil || !strings.Contains(err.Error(), "server_id: missing") {
		t.Fatalf("ParseAnnotation without a pod: %v", err)
	}
	p := NewPlanner()
	in := Input{Owner: o, Template: tm, Pods: pods, Grouping: designGrouping, Now: t0}
	res, err := p.Plan(in)
	if err != nil || res.Groups[0].Phase != PhaseCompleted {
		t.Fatal(err, res.Groups)
	}
	table := res.ConfigMaps[0].ConfigMap.Data["ranktable.json"]
	if !strings.Contains(table, `"server_id": "node-0"`) || !strings.Contains(table, `"host_ip": "172.16.0.2"`) {
		t.Fatalf("table does not use the pods' node names and IPs:\n%s", table)
	}
	moved := pods[0].DeepCopy()
	moved.Spec.NodeName = "node-9"
	in.Pods = []*corev1.Pod{moved, pods[1]}
	res, _ = p.Plan(in)
	fresh, _ := Plan(in)
	if !resultsEqual(res, fresh) || !strings.Contains(res.ConfigMaps[0].ConfigMap.Data["ranktable.json"], `"server_id": "node-9"`) {
		t.Fatal("the Planner did not re-parse a pod whose node changed")
	}
	if _, err := LoadTemplate(rtCM(map[string]string{KeyInferenceEngine: "mindie", KeyLevel: "role", KeyRanktableTemplate: `{"n": {{ nodeName | quote }}}`}), nil, LoadOptions{}); err == nil {
		t.Fatal("a ranktable template may call a parser template's pod function")
	}
}

// TestParserPodFunctions: wherever a parser template calls a pod function (actions,
// arguments, branches, ranges, defined templates) it returns the executing pod's
// value, and a field of the same name is not a call.
func TestParserPodFunctions(t *testing.T) {
	cases := []struct {
		name, text string
		want       string
	}{
		{"a call in an action", `serverId: {{ nodeName }}`, "node-a"},
		{"a call in a pipeline argument", `serverId: {{ printf "%s" (podIP) | quote }}`, "10.1.2.3"},
		{"a call in an else branch", `{{ if not . }}x{{ else }}{{ podNamespace }}{{ end }}`, "ns-a"},
		{"a call in a range", `{{ range (fromJson .).devices }}{{ podName }}{{ end }}`, "pod-a"},
		{"a call in a defined template", `{{ define "x" }}{{ nodeName }}{{ end }}{{ template "x" }}`, "node-a"},
		{"a field of the same name", `{{ (fromJson .).podIP }} podIP nodeName`, "field podIP nodeName"},
	}
	pod := podInfo{ip: "10.1.2.3", node: "node-a", name: "pod-a", namespace: "ns-a"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{Data: map[string]string{KeyParserTemplate: c.text}}
			p, err := loadParserTemplate(cm, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := pod.execute(p.(*templateParser).tmpl, `{"podIP":"field","devices":[1]}`, 1<<10, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("output %q lacks %q", out, c.want)
			}
		})
	}
}
