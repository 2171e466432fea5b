package ranktable

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/kplan-dev/kplan/internal/canonhash"
	"github.com/kplan-dev/kplan/internal/natural"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
)

// apiServer applies a plan's ConfigMaps as the API server would: created and updated
// objects get a UID and a new resourceVersion; unchanged ones stay as they are.
type apiServer struct {
	rv  int
	cms map[string]*corev1.ConfigMap
}

func (s *apiServer) apply(res Result) []*corev1.ConfigMap {
	if s.cms == nil {
		s.cms = map[string]*corev1.ConfigMap{}
	}
	for _, d := range res.ConfigMaps {
		if d.Action == ActionNone {
			continue
		}
		c := d.ConfigMap.DeepCopy()
		s.rv++
		c.ResourceVersion = strconv.Itoa(s.rv)
		if c.UID == "" {
			c.UID = types.UID("cm-uid-" + c.Name)
		}
		s.cms[c.Name] = c
	}
	out := make([]*corev1.ConfigMap, 0, len(s.cms))
	for _, k := range sortedNames(s.cms) {
		out = append(out, s.cms[k])
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// groupScenario returns groups serving groups of pods pods each at group level, with
// expected counts.
func groupScenario(o Owner, groups, pods int) ([]*corev1.Pod, map[GroupKey]int) {
	var list []*corev1.Pod
	exp := map[GroupKey]int{}
	for g := 0; g < groups; g++ {
		for k := 0; k < pods; k++ {
			list = append(list, kthenaPod(o, g, "worker-0", k, true, 4))
		}
		exp[GroupKey{Group: fmt.Sprintf("%s-%d", o.Name, g)}] = pods
	}
	return list, exp
}

func groupOwner(name string) Owner {
	o := testOwner(name)
	o.Annotations = map[string]string{AnnotationLevel: "group"}
	return o
}

func TestPlannerReusesUnchangedGroups(t *testing.T) {
	o := groupOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	pods, exp := groupScenario(o, 4, 2)
	var srv apiServer
	p := NewPlanner()
	in := Input{Owner: o, Template: tm, Pods: pods, Expected: exp, Now: t0}
	res, err := p.Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	in.ConfigMaps = srv.apply(res)
	before := map[GroupKey]*byte{}
	for k, ge := range p.keptGroups() {
		before[k.key] = unsafe.StringData(ge.content)
	}

	changed := pods[2].DeepCopy() // group ms-1
	changed.Annotations[DefaultAnnotationName] = strings.Replace(changed.Annotations[DefaultAnnotationName], `"10.1.0.1"`, `"10.1.99.1"`, 1)
	in.Pods = append([]*corev1.Pod(nil), pods...)
	in.Pods[2] = changed
	res, err = p.Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := Plan(in)
	if !resultsEqual(res, fresh) {
		t.Fatal("Planner differs from Plan")
	}
	for i, d := range res.ConfigMaps {
		k := d.Group
		switch {
		case k.Group == "ms-1":
			if d.Action != ActionUpdate || !strings.Contains(d.ConfigMap.Data["ranktable.json"], "10.1.99.1") {
				t.Errorf("changed group: action %s", d.Action)
			}
			if unsafe.StringData(p.keptGroups()[groupCacheKey{o.UID, k}].content) == before[k] {
				t.Error("the changed group was not re-rendered")
			}
		default:
			if d.Action != ActionNone || d.ConfigMap != in.ConfigMaps[i] {
				t.Errorf("group %s: action %s, ConfigMap not the existing object", k, d.Action)
			}
			if unsafe.StringData(p.keptGroups()[groupCacheKey{o.UID, k}].content) != before[k] {
				t.Errorf("unchanged group %s was re-rendered", k)
			}
		}
	}
	if len(res.Events) != 1 || res.Events[0].Reason != ReasonGenerated {
		t.Errorf("events %+v, want one RanktableGenerated", res.Events)
	}
}

// TestPlannerUnchangedPodsDoNotAllocate: a reconcile where nothing changed costs the
// same few allocations (the result's slices) for 4 groups and for 64.
func TestPlannerUnchangedPodsDoNotAllocate(t *testing.T) {
	o := groupOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	allocs := func(groups int) float64 {
		pods, exp := groupScenario(o, groups, 4)
		var srv apiServer
		p := NewPlanner()
		in := Input{Owner: o, Template: tm, Pods: pods, Expected: exp, Now: t0}
		res, _ := p.Plan(in)
		in.ConfigMaps = srv.apply(res)
		res, _ = p.Plan(in) // records the verified ConfigMap versions
		for _, d := range res.ConfigMaps {
			if d.Action != ActionNone {
				t.Fatalf("group %s: action %s on an unchanged input", d.Group, d.Action)
			}
		}
		return testing.AllocsPerRun(20, func() { _, _ = p.Plan(in) })
	}
	small, large := allocs(4), allocs(64)
	if small != large || large > 4 {
		t.Fatalf("allocations per unchanged plan: %v for 4 groups, %v for 64; want the same small constant", small, large)
	}
}

func TestPlannerHashes(t *testing.T) {
	o := testOwner("qwen-inference")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	pods := designPods(o)
	res, err := NewPlanner().Plan(Input{Owner: o, Template: tm, Pods: pods, Now: t0})
	if err != nil || res.Groups[0].Phase != PhaseCompleted {
		t.Fatal(err, res.Groups)
	}
	cm := res.ConfigMaps[0].ConfigMap
	if got, want := cm.Annotations[AnnotationContentHash], canonhash.Short(cm.Data["ranktable.json"]); got != want {
		t.Errorf("content hash %s, want %s", got, want)
	}
	uids := []string{string(pods[0].UID), string(pods[1].UID)}
	if uids[1] < uids[0] {
		uids[0], uids[1] = uids[1], uids[0]
	}
	h := canonhash.New()
	for _, u := range uids {
		h.String(u)
	}
	if got, want := cm.Annotations[AnnotationPodsHash], h.Hex(8); got != want {
		t.Errorf("pods hash %s, want %s", got, want)
	}
}

// TestPlannerSharedByOwners: one Planner for two owners gives each owner what Plan
// gives, and Forget drops one owner's state only.
func TestPlannerSharedByOwners(t *testing.T) {
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	a, b := groupOwner("a"), groupOwner("b")
	pa, ea := groupScenario(a, 2, 2)
	pb, eb := groupScenario(b, 3, 1)
	ina := Input{Owner: a, Template: tm, Pods: pa, Expected: ea, Now: t0}
	inb := Input{Owner: b, Template: tm, Pods: pb, Expected: eb, Now: t0}
	p := NewPlanner()
	for round := 0; round < 2; round++ {
		for _, in := range []Input{ina, inb} {
			got, _ := p.Plan(in)
			want, _ := Plan(in)
			if !resultsEqual(got, want) {
				t.Fatalf("round %d owner %s: Planner differs from Plan", round, in.Owner.Name)
			}
		}
	}
	if p.keptPods() != len(pa)+len(pb) || len(p.keptGroups()) != 5 {
		t.Fatalf("kept %d pods and %d groups, want %d and 5", p.keptPods(), len(p.keptGroups()), len(pa)+len(pb))
	}
	p.Forget(a.UID)
	if p.keptPods() != len(pb) || len(p.keptGroups()) != 3 {
		t.Fatalf("after Forget: %d pods and %d groups, want %d and 3", p.keptPods(), len(p.keptGroups()), len(pb))
	}
}

func TestDecimals(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 11, 99, 100, 1234} {
		d := decimals(n)
		for i := 0; i <= n; i++ {
			if got := d.at(i); got != strconv.Itoa(i) {
				t.Fatalf("decimals(%d).at(%d) = %q", n, i, got)
			}
		}
		if len(d.ends) != n+1 {
			t.Fatalf("decimals(%d): %d ends", n, len(d.ends))
		}
	}
}

func TestFastRanktableJSON(t *testing.T) {
	cases := []struct {
		name, in string
		fast     bool
	}{
		{"the design's annotation", designAnnotation("qwen-0", "192.168.1.10", "10.20.0.2", "10.20.0.3"), true},
		{"whitespace everywhere", " {\t\"server_id\" : \"s\" ,\n\"devices\":[ {} , {\"device_id\":\"1\"}]}\r\n", true},
		{"no devices key", `{"server_id":"s"}`, true},
		{"an escape", `{"server_id":"a\"b","devices":[]}`, false},
		{"a repeated key", `{"server_id":"a","server_id":"b","devices":[]}`, false},
		{"a repeated device key", `{"server_id":"a","devices":[{"device_id":"0","device_id":"1"}]}`, false},
		{"another spelling", `{"Server_ID":"a","devices":[]}`, false},
		{"an unknown key", `{"server_id":"a","devices":[],"x":"y"}`, false},
		{"a number", `{"server_id":"a","devices":[{"device_id":0}]}`, false},
		{"null devices", `{"server_id":"a","devices":null}`, false},
		{"non-ASCII", `{"server_id":"é","devices":[]}`, false},
		{"an empty string", `{"server_id":"","devices":[]}`, false},
		{"trailing data", `{"server_id":"a","devices":[]}x`, false},
		{"truncated", `{"server_id":"a","devices":[`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fast, ok := fastRanktableJSON(c.in)
			if ok != c.fast {
				t.Fatalf("fast path taken: %v, want %v", ok, c.fast)
			}
			if !ok {
				return
			}
			slow, err := decodeRanktableJSON(c.in)
			if err != nil {
				t.Fatalf("fast path accepted what encoding/json rejects: %v", err)
			}
			if diff := gocmp.Diff(slow, fast); diff != "" {
				t.Fatalf("fast path differs from encoding/json (-json +fast):\n%s", diff)
			}
		})
	}
	if n := testing.AllocsPerRun(10, func() { _, _ = fastRanktableJSON(cases[0].in) }); n != 1 {
		t.Errorf("%v allocations per annotation, want 1 (the device slice)", n)
	}
}

// TestNativeRendererSkipsTheJSONCheckOnlyForPlainStrings: validated data is plain, so
// the common path needs no json.Valid; a status needing escapes turns the check on.
func TestNativeRendererSkipsTheJSONCheckOnlyForPlainStrings(t *testing.T) {
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	var members []Member
	for i, p := range designPods(testOwner("qwen-inference")) {
		d, err := tm.ParseAnnotation(p.Annotations[DefaultAnnotationName])
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, Member{Pod: fmt.Sprint("default/p", i), Data: d, RankIndex: -1})
	}
	table, err := Build(members, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, valid := tm.native(nil, table); !valid {
		t.Error("a validated table was not vouched for")
	}
	table.Status = `x"`
	if _, valid := tm.native(nil, table); valid {
		t.Error("a status with a quote was vouched for")
	}
	if _, err := tm.Render(table, RenderOptions{}); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("a broken table rendered: %v", err)
	}
}

// TestIPv4OrderIsNaturalOrder: the numeric sort of canonical dotted quads Build uses
// gives natural order, and parseIPv4 accepts exactly what netip does (in canonical form).
func TestIPv4OrderIsNaturalOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		octet := rapid.OneOf(rapid.IntRange(0, 12), rapid.IntRange(0, 255))
		ids := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) string {
			return fmt.Sprintf("%d.%d.%d.%d", octet.Draw(t, "a"), octet.Draw(t, "b"), octet.Draw(t, "c"), octet.Draw(t, "d"))
		}), 1, 20).Draw(t, "ids")
		if !allIPv4(ids, func(s string) string { return s }) {
			t.Fatalf("canonical addresses rejected: %v", ids)
		}
		a, b := slices.Clone(ids), slices.Clone(ids)
		slices.SortFunc(a, natural.Compare)
		slices.SortFunc(b, func(x, y string) int { return cmp.Compare(ipv4(x), ipv4(y)) })
		if !slices.Equal(a, b) {
			t.Fatalf("natural %v, numeric %v", a, b)
		}
		pieces := rapid.SliceOfN(rapid.SampledFrom([]string{"0", "00", "01", "1", "9", "10", "99", "255", "256", "1000", "", "a", " 1"}), 1, 5).Draw(t, "pieces")
		s := strings.Join(pieces, ".")
		addr, err := netip.ParseAddr(s)
		want := err == nil && addr.Is4() && addr.String() == s
		if got, ok := parseIPv4(s); ok != want || (ok && got != binary.BigEndian.Uint32(addr.AsSlice())) {
			t.Fatalf("parseIPv4(%q) = %d, %v; netip says %v", s, got, ok, want)
		}
	})
}

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
	in := Input{Owner: o, Template: tm, Pods: pods, Now: t0}
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
			out, err := p.(*templateParser).tmpl.execute(`{"podIP":"field","devices":[1]}`, 1<<10, nil, pod)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("output %q lacks %q", out, c.want)
			}
		})
	}
}

// keptPods counts the pod entries p keeps over all owners.
func (p *Planner) keptPods() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, o := range p.owners {
		n += len(o.pods)
	}
	return n
}

// keptGroups returns the group entries p keeps over all owners.
func (p *Planner) keptGroups() map[groupCacheKey]*groupEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[groupCacheKey]*groupEntry{}
	for _, o := range p.owners {
		for k, g := range o.groups {
			m[k] = g
		}
	}
	return m
}
