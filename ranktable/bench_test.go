package ranktable

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
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
	raw := func(name, text, missingKey string) *program {
		funcs := sprig.HermeticTxtFuncMap()
		funcs["fromJson"] = func(s string) (any, error) {
			return fromJSON(&budget{perCall: true, maxWork: math.MaxInt64, maxBytes: math.MaxInt64}, "fromJson", s)
		}
		funcs["toJson"] = toJSON
		t, err := template.New(name).Option("missingkey=" + missingKey).Funcs(funcs).Parse(text)
		if err != nil {
			tb.Fatal(err)
		}
		p := &program{base: t, maxWork: math.MaxInt64, maxBytes: math.MaxInt64}
		p.newExecutor = func() (*executor, error) { return &executor{t: t}, nil }
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

// TestSeedReferenceMatchesPlan: the seed's code path yields the tables Plan renders
// with the design's order (the seed leaves the status empty).
func TestSeedReferenceMatchesPlan(t *testing.T) {
	s := newScenario(4, 3, 16)
	parser, _ := LibraryConfigMap(LibraryParserStandard)
	groups := map[string][]*corev1.Pod{}
	for _, p := range s.podList {
		k := KeyOf(p, Level(s.level), Grouping{})
		groups[ConfigMapName(s.owner.Name, k)] = append(groups[ConfigMapName(s.owner.Name, k)], p)
	}
	seed, err := seedReference(parser.Data[KeyParserTemplate], designTemplateText, groups)
	if err != nil {
		t.Fatal(err)
	}
	in := s.input(mustLibrary(t, LibraryMindIERole, LoadOptions{}))
	in.Order = Lexicographic
	res, err := Plan(in)
	if err != nil || len(res.ConfigMaps) != len(seed) {
		t.Fatalf("%v: %d ConfigMaps, seed %d", err, len(res.ConfigMaps), len(seed))
	}
	for _, d := range res.ConfigMaps {
		got := d.ConfigMap.Data[DefaultFilename]
		want := strings.Replace(seed[d.ConfigMap.Name], `"status": ""`, `"status": "completed"`, 1)
		if got != want || got == "" {
			t.Fatalf("%s: Plan and the seed differ:\n%s\nseed:\n%s", d.ConfigMap.Name, got, want)
		}
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
					if d.Action != ActionNone {
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

// The seed design's controller code, as it is written: the function map is built once
// per process (a controller keeps it in a package variable), parsePodRanktable parses
// the parser template on every call and decodes its YAML output into the design's
// untagged structs, buildRanktableTemplateData groups by server id and assigns ranks
// with sort.Strings / sort.Slice / strconv.Itoa, and renderRanktable parses and
// executes the ranktable template once per group on the typed data.
var seedFuncMap = sprig.TxtFuncMap()

type seedDeviceInfo struct{ DeviceId, DeviceIp string } //nolint:revive // the design's names

type seedPodData struct {
	PodName  string
	ServerId string //nolint:revive
	Devices  []seedDeviceInfo
}

type seedDeviceWithRank struct{ DeviceId, DeviceIp, RankId string } //nolint:revive

type seedServerInfo struct {
	ServerId string //nolint:revive
	Devices  []seedDeviceWithRank
}

type seedTemplateData struct {
	Status       string
	ServerCount  int
	TotalDevices int
	Timestamp    string
	Servers      []seedServerInfo
}

func seedParsePodRanktable(parserText, annotation string) (seedPodData, error) {
	t, err := template.New("parser").Funcs(seedFuncMap).Parse(parserText)
	if err != nil {
		return seedPodData{}, err
	}
	var sb strings.Builder
	if err := t.Execute(&sb, annotation); err != nil {
		return seedPodData{}, err
	}
	var d seedPodData
	if err := yaml.Unmarshal([]byte(sb.String()), &d); err != nil {
		return seedPodData{}, err
	}
	return d, nil
}

func seedBuildTemplateData(pods []seedPodData) seedTemplateData {
	serverMap := map[string][]seedDeviceInfo{}
	for _, p := range pods {
		serverMap[p.ServerId] = append(serverMap[p.ServerId], p.Devices...)
	}
	servers := make([]seedServerInfo, 0, len(serverMap))
	rank := 0
	ids := make([]string, 0, len(serverMap))
	for id := range serverMap {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		devices := serverMap[id]
		sort.Slice(devices, func(i, j int) bool { return devices[i].DeviceId < devices[j].DeviceId })
		withRank := make([]seedDeviceWithRank, len(devices))
		for i, d := range devices {
			withRank[i] = seedDeviceWithRank{DeviceId: d.DeviceId, DeviceIp: d.DeviceIp, RankId: strconv.Itoa(rank)}
			rank++
		}
		servers = append(servers, seedServerInfo{ServerId: id, Devices: withRank})
	}
	return seedTemplateData{ServerCount: len(servers), Servers: servers}
}

func seedRenderRanktable(text string, data seedTemplateData) (string, error) {
	t, err := template.New("ranktable").Funcs(seedFuncMap).Parse(text)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	if err := t.Execute(&sb, data); err != nil {
		return "", err
	}
	return sb.String(), nil
}

// seedReference is the seed's generateAndUpdateRanktables without the API calls.
func seedReference(parserText, rtText string, groups map[string][]*corev1.Pod) (map[string]string, error) {
	out := map[string]string{}
	for name, pods := range groups {
		parsed := make([]seedPodData, 0, len(pods))
		for _, p := range pods {
			ann := p.Annotations[DefaultAnnotationName]
			if ann == "" {
				continue
			}
			d, err := seedParsePodRanktable(parserText, ann)
			if err != nil {
				return nil, err
			}
			parsed = append(parsed, d)
		}
		table, err := seedRenderRanktable(rtText, seedBuildTemplateData(parsed))
		if err != nil {
			return nil, err
		}
		out[name] = table
	}
	return out, nil
}

func BenchmarkSeedReference(b *testing.B) {
	parser, _ := LibraryConfigMap(LibraryParserStandard)
	for _, s := range benchScenarios {
		b.Run(s.name, func(b *testing.B) {
			groups := map[string][]*corev1.Pod{}
			for _, p := range s.podList {
				k := KeyOf(p, Level(s.level), Grouping{})
				groups[k.String()] = append(groups[k.String()], p)
			}
			measure(b, func(int) {
				out, err := seedReference(parser.Data[KeyParserTemplate], designTemplateText, groups)
				if err != nil || len(out) != s.groups {
					b.Fatal(err)
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
