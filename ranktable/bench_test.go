package ranktable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/internal/tmpl"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

type benchScenario struct {
	name                  string
	groups, pods, devices int
	level                 string
	expected              map[GroupKey]int
	owner                 Owner
	podList               []*corev1.Pod
}

func newScenario(groups, pods, devices int) *benchScenario {
	s := &benchScenario{groups: groups, pods: pods, devices: devices, owner: testOwner("ms"), expected: map[GroupKey]int{}}
	s.level = "role"
	if groups > 1 {
		s.level = "group"
		s.name = fmt.Sprintf("groups=%d,pods=%d,devices=%d", groups, pods, devices)
	} else {
		s.name = fmt.Sprintf("pods=%d,devices=%d", pods, devices)
	}
	s.owner.Annotations = map[string]string{AnnotationLevel: s.level}
	for g := 0; g < groups; g++ {
		for k := 0; k < pods; k++ {
			pod := kthenaPod(s.owner, g, "worker-0", k, true, devices)
			pod.ResourceVersion = "1" // as listed from the API server
			// kthena labels its pods with their ModelServing, which the seed's grouping reads.
			pod.Labels[LabelModelServingName] = s.owner.Name
			s.podList = append(s.podList, pod)
		}
		key := GroupKey{Group: fmt.Sprintf("ms-%d", g)}
		if s.level == "role" {
			key.Role = "worker-0"
		}
		s.expected[key] = pods
	}
	return s
}

var benchScenarios = []*benchScenario{newScenario(1, 1024, 16), newScenario(128, 8, 16), newScenario(1, 256, 16)}

func (s *benchScenario) input(tm *Template) Input {
	return Input{Owner: s.owner, Template: tm, Pods: s.podList, Expected: s.expected, Now: t0, MaxOutputBytes: 8 << 20}
}

// cpuTime is the process's user and system CPU time. The machine the benchmarks run
// on is shared and oversubscribed, so besides wall time (ns/op) every benchmark reports
// the CPU time it used (cpu-ns/op, including the garbage collector's threads), which
// other processes do not inflate.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs body b.N times with the timer and the CPU clock reset.
func measure(b *testing.B, body func(i int)) {
	b.ReportAllocs()
	runtime.GC() // the setup's garbage is not the benchmark's
	b.ResetTimer()
	start := cpuTime()
	for i := 0; i < b.N; i++ {
		body(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func checkCompleted(b *testing.B, res Result, err error) {
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range res.Groups {
		if g.Phase != PhaseCompleted {
			b.Fatalf("group %s: %s %v", g.Group, g.Phase, g.Error)
		}
	}
}

func BenchmarkPlan(b *testing.B) {
	tmplPath := withoutNative(mustLibrary(b, LibraryMindIERole, LoadOptions{}))
	rt, _ := LibraryConfigMap(LibraryMindIERole)
	rt.Data[KeyPodParserTemplate] = BuiltinRanktableJSON
	builtin, err := LoadTemplate(rt, nil, LoadOptions{})
	if err != nil || builtin.native == nil {
		b.Fatal("builtin template not native", err)
	}
	for _, s := range benchScenarios {
		for _, v := range []struct {
			name string
			tm   *Template
		}{{"template", tmplPath}, {"template-nobudget", unbudgeted(b, tmplPath)}, {"builtin", builtin}} {
			b.Run(s.name+",parser="+v.name, func(b *testing.B) {
				in := s.input(v.tm)
				measure(b, func(int) {
					res, err := Plan(in)
					checkCompleted(b, res, err)
				})
			})
		}
	}
}

// unbudgeted returns a copy of tm whose ranktable and parser templates run as they did
// before the render budget: parsed with sprig's hermetic map (and fromJson reporting
// errors), without the inserted range, call and print checks, each execution on the
// one parsed template without a pooled clone. Only the table copy (a separate
// guarantee) is kept. It exists to measure what the budget costs.
func unbudgeted(tb testing.TB, tm *Template) *Template {
	raw := func(name, text, missingKey string) *tmpl.Program {
		p, err := tmpl.ParseUnbudgeted(tmpl.Spec{Name: name, Text: text, MissingKey: missingKey})
		if err != nil {
			tb.Fatal(err)
		}
		return p
	}
	c := *tm
	c.tmpl = raw(tm.Name, tm.Text, "error")
	if tp, ok := tm.parser.(*templateParser); ok {
		std, _ := LibraryConfigMap(LibraryParserStandard)
		if tm.ParserName != std.Name {
			tb.Fatalf("unbudgeted knows only the standard parser, not %s", tm.ParserName)
		}
		c.parser = &templateParser{name: tp.name, tmpl: raw(tp.name, std.Data[KeyParserTemplate], "zero")}
	}
	return &c
}

// TestSeedReferenceMatchesPlan: the seed's code yields the tables Plan renders in the
// design's order, at both levels, so the benchmarks compare the same work.
func TestSeedReferenceMatchesPlan(t *testing.T) {
	parser, _ := LibraryConfigMap(LibraryParserStandard)
	for _, s := range []*benchScenario{newScenario(4, 3, 16), newScenario(1, 5, 16)} {
		t.Run(s.name, func(t *testing.T) {
			seed, err := seedReference(parser.Data[KeyParserTemplate], designTemplateText, Level(s.level), s.podList)
			if err != nil {
				t.Fatal(err)
			}
			in := s.input(mustLibrary(t, LibraryMindIERole, LoadOptions{}))
			in.Order = Lexicographic
			res, err := Plan(in)
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, d := range res.ConfigMaps {
				got = append(got, d.ConfigMap.Data[DefaultFilename])
			}
			for _, table := range seed {
				want = append(want, table)
			}
			sort.Strings(got)
			sort.Strings(want)
			if len(got) != s.groups || len(want) != s.groups {
				t.Fatalf("%d tables from Plan, %d from the seed, want %d", len(got), len(want), s.groups)
			}
			for i := range got {
				if got[i] != want[i] || got[i] == "" {
					t.Fatalf("Plan and the seed differ:\n%s\nseed:\n%s", got[i], want[i])
				}
			}
		})
	}
}

// BenchmarkPlanWarm measures one reconcile after exactly one pod's annotation
// changed: a Planner that planned the previous state, the existing ConfigMaps as the
// API server holds them after applying that plan (with resourceVersions), and pod 0's
// annotation alternating between two values. Every iteration yields one update.
func BenchmarkPlanWarm(b *testing.B) {
	rt, _ := LibraryConfigMap(LibraryMindIERole)
	rt.Data[KeyPodParserTemplate] = BuiltinRanktableJSON
	tm, _ := LoadTemplate(rt, nil, LoadOptions{})
	for _, s := range benchScenarios {
		b.Run(s.name, func(b *testing.B) {
			in := s.input(tm)
			pods := append([]*corev1.Pod(nil), s.podList...)
			in.Pods = pods
			orig := pods[0]
			alt := orig.DeepCopy()
			alt.Annotations[DefaultAnnotationName] = strings.Replace(alt.Annotations[DefaultAnnotationName], `"10.0.0.1"`, `"10.0.99.1"`, 1)
			alt.ResourceVersion = "2"
			p := NewPlanner()
			var srv apiServer
			states := [2][]*corev1.ConfigMap{} // the ConfigMaps after planning orig, alt
			for i, pod := range []*corev1.Pod{orig, alt, orig} {
				pods[0] = pod
				res, err := p.Plan(in)
				checkCompleted(b, res, err)
				states[i%2] = srv.apply(res)
				in.ConfigMaps = states[i%2]
			}
			// Now: the Planner and the ConfigMaps hold the orig state.
			next := [2]*corev1.Pod{alt, orig}
			measure(b, func(i int) {
				pods[0], in.ConfigMaps = next[i%2], states[i%2]
				res, err := p.Plan(in)
				checkCompleted(b, res, err)
				updates := 0
				for _, d := range res.ConfigMaps {
					if d.Action != kplan.ActionNone {
						updates++
					}
				}
				if updates != 1 {
					b.Fatalf("%d ConfigMaps to write, want 1", updates)
				}
			})
		})
	}
}

func BenchmarkDecodeAnnotations(b *testing.B) {
	for _, s := range benchScenarios {
		b.Run(s.name, func(b *testing.B) {
			measure(b, func(int) {
				for _, p := range s.podList {
					var a jsonAnnotation
					if err := json.Unmarshal([]byte(p.Annotations[DefaultAnnotationName]), &a); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// The seed's ranktable code as kthena runs it: the ModelServing controller's ranktable
// package of the kthena fork the design was implemented in (github.com/VanderChen/kthena,
// pkg/model-serving-controller/ranktable; template.go read at commits 36faea71fc92 and
// b1d3e63174ae, the same in the functions reproduced here, types.go at 36faea71fc92,
// controller.go at a392f275af69). Each function below names the function
// it reproduces; only the API calls (EnsureRanktableConfigMap's Get and Create or
// Update, and the owner reference and labels built for them) and the klog calls (off
// at the default verbosity) are left out.

// seedPodData is types.go's PodRanktableData: JSON-tagged, as sigs.k8s.io/yaml decodes
// through encoding/json.
type seedPodData struct {
	PodName  string           `json:"podName"`
	ServerId string           `json:"serverId"` //nolint:revive // kthena's names
	Devices  []seedDeviceInfo `json:"devices"`
}

type seedDeviceInfo struct {
	DeviceId string `json:"deviceId"` //nolint:revive
	DeviceIp string `json:"deviceIp"` //nolint:revive
}

// seedTemplateData is types.go's RanktableTemplateData, what the ranktable template
// executes on.
type seedTemplateData struct {
	Status       string           `json:"status"`
	ServerCount  int              `json:"serverCount"`
	TotalDevices int              `json:"totalDevices"`
	Timestamp    string           `json:"timestamp"`
	Servers      []seedServerInfo `json:"servers"`
}

type seedServerInfo struct {
	ServerId string               `json:"serverId"` //nolint:revive
	Devices  []seedDeviceWithRank `json:"devices"`
}

type seedDeviceWithRank struct {
	DeviceId string `json:"deviceId"` //nolint:revive
	DeviceIp string `json:"deviceIp"` //nolint:revive
	RankId   string `json:"rankId"`   //nolint:revive
}

// seedParsePod is TemplateManager.ParsePodRanktable (template.go), called once per pod:
// a function map of two entries (fromJson, quote) built on every call, the parser
// template parsed, executed on the annotation string into a bytes.Buffer, and its
// YAML decoded with sigs.k8s.io/yaml into the tagged struct.
func seedParsePod(parserText, annotation string) (*seedPodData, error) {
	funcs := template.FuncMap{
		"fromJson": func(s string) (any, error) {
			var v any
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				return nil, err
			}
			return v, nil
		},
		"quote": func(s string) string { return fmt.Sprintf("%q", s) },
	}
	t, err := template.New("pod-parser").Funcs(funcs).Parse(parserText)
	if err != nil {
		return nil, fmt.Errorf("failed to parse pod parser template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, annotation); err != nil {
		return nil, fmt.Errorf("failed to execute pod parser template: %w", err)
	}
	var d seedPodData
	if err := yaml.Unmarshal(buf.Bytes(), &d); err != nil {
		return nil, fmt.Errorf("failed to unmarshal pod ranktable data: %w", err)
	}
	return &d, nil
}

// seedBuildTemplateData is TemplateManager.BuildRanktableTemplateData (template.go):
// devices merged per server id, server ids ordered with sort.Strings, each server's
// devices with sort.Slice on the device id string, rank ids from strconv.Itoa, and
// the current time as the timestamp (which the MindIE template does not print).
func seedBuildTemplateData(status string, pods []seedPodData) seedTemplateData {
	byServer := map[string][]seedDeviceInfo{}
	for _, p := range pods {
		byServer[p.ServerId] = append(byServer[p.ServerId], p.Devices...)
	}
	ids := make([]string, 0, len(byServer))
	for id := range byServer {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	servers := make([]seedServerInfo, 0, len(byServer))
	rank, total := 0, 0
	for _, id := range ids {
		devices := byServer[id]
		sort.Slice(devices, func(i, j int) bool { return devices[i].DeviceId < devices[j].DeviceId })
		ranked := make([]seedDeviceWithRank, len(devices))
		for i, d := range devices {
			ranked[i] = seedDeviceWithRank{DeviceId: d.DeviceId, DeviceIp: d.DeviceIp, RankId: strconv.Itoa(rank)}
			rank++
			total++
		}
		servers = append(servers, seedServerInfo{ServerId: id, Devices: ranked})
	}
	return seedTemplateData{Status: status, ServerCount: len(servers), TotalDevices: total,
		Timestamp: time.Now().Format(time.RFC3339), Servers: servers}
}

// seedRender is TemplateManager.RenderRanktable (template.go), called once per group: a
// function map of two entries (quote, toJson) built on every call, the ranktable
// template parsed, executed into a bytes.Buffer, the output checked by decoding it
// with json.Unmarshal, and returned as a string.
func seedRender(text string, data seedTemplateData) (string, error) {
	funcs := template.FuncMap{
		"quote": func(s string) string { return fmt.Sprintf("%q", s) },
		"toJson": func(v any) (string, error) {
			b, err := json.Marshal(v)
			if err != nil {
				return "", err
			}
			return string(b), nil
		},
	}
	t, err := template.New("ranktable").Funcs(funcs).Parse(text)
	if err != nil {
		return "", fmt.Errorf("failed to parse ranktable template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("failed to execute ranktable template: %w", err)
	}
	var check any
	if err := json.Unmarshal(buf.Bytes(), &check); err != nil {
		return "", fmt.Errorf("generated ranktable is not valid JSON: %w", err)
	}
	return buf.String(), nil
}

// seedReference is RanktableController.GenerateAndUpdateRanktables (controller.go)
// without the API calls: pods grouped as its groupPods does (by role name at role
// level; by the ModelServing name and serving group labels at group level), a group
// whose pods all have the annotation (CheckPodsRanktableReady) parsed pod by pod,
// built and rendered with status "completed". It returns the tables by group. Where
// kthena logs a pod whose annotation does not parse and leaves it out of the table,
// this returns the error: a benchmark must not measure a smaller table unnoticed.
func seedReference(parserText, rtText string, level Level, pods []*corev1.Pod) (map[string]string, error) {
	groups := map[string][]*corev1.Pod{}
	for _, p := range pods {
		var key string
		if level == LevelRole {
			key = p.Labels[LabelRole]
		} else if _, ok := p.Labels[LabelModelServingName]; ok {
			key = p.Labels[LabelGroupName]
		}
		if key != "" {
			groups[key] = append(groups[key], p)
		}
	}
	out := map[string]string{}
	for name, members := range groups {
		ready := len(members) > 0
		for _, p := range members {
			ready = ready && p.Annotations[DefaultAnnotationName] != ""
		}
		if !ready {
			out[name] = ""
			continue
		}
		parsed := make([]seedPodData, 0, len(members))
		for _, p := range members {
			d, err := seedParsePod(parserText, p.Annotations[DefaultAnnotationName])
			if err != nil {
				return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			parsed = append(parsed, *d)
		}
		table, err := seedRender(rtText, seedBuildTemplateData("completed", parsed))
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", name, err)
		}
		out[name] = table
	}
	return out, nil
}

func BenchmarkSeedReference(b *testing.B) {
	parser, _ := LibraryConfigMap(LibraryParserStandard)
	for _, s := range benchScenarios {
		b.Run(s.name, func(b *testing.B) {
			measure(b, func(int) {
				out, err := seedReference(parser.Data[KeyParserTemplate], designTemplateText, Level(s.level), s.podList)
				if err != nil || len(out) != s.groups {
					b.Fatal(err, len(out))
				}
			})
		})
	}
}

// oneServerMembers returns pods members on one server (one server id), each with
// devices devices; device ids are unique across the server: 0..pods*devices-1.
func oneServerMembers(pods, devices int) []Member {
	ms := make([]Member, pods)
	for p := range ms {
		devs := make([]Device, devices)
		for d := range devs {
			id := p*devices + d
			devs[d] = Device{ID: strconv.Itoa(id), IP: fmt.Sprintf("10.%d.%d.%d", id>>16, id>>8&255, id&255)}
		}
		ms[p] = Member{Pod: fmt.Sprintf("ns/pod-%d", p), Data: PodData{ServerID: "192.168.1.10", Devices: devs}, RankIndex: -1}
	}
	return ms
}

// BenchmarkBuildOneServer is Build of 1024 pods x 64 devices that all report one
// server: every device id is checked against the server's other devices.
func BenchmarkBuildOneServer(b *testing.B) {
	ms := oneServerMembers(1024, 64)
	b.Run("pods=1024,devices=64", func(b *testing.B) {
		measure(b, func(int) {
			t, err := Build(ms, BuildOptions{})
			if err != nil || t.TotalDevices != 1024*64 {
				b.Fatal(err)
			}
		})
	})
}
