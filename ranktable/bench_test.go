package ranktable

import (
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
	tmplPath := mustLibrary(b, LibraryMindIERole, LoadOptions{DisableNative: true})
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
		}{{"template", tmplPath}, {"builtin", builtin}} {
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

// seedReference re-implements the design's code plainly: the parser template is
// parsed per pod with sprig's full function map, its output decoded as YAML, servers
// and devices sorted with sort.Strings order, and the ranktable template parsed per
// group.
type seedPodData struct {
	PodName  string `json:"podName"`
	ServerId string `json:"serverId"` //nolint:revive
	Devices  []struct {
		DeviceId string `json:"deviceId"` //nolint:revive
		DeviceIp string `json:"deviceIp"` //nolint:revive
	} `json:"devices"`
}

func seedReference(parserText, rtText string, groups map[string][]*corev1.Pod) (map[string]string, error) {
	out := map[string]string{}
	for name, pods := range groups {
		var parsed []seedPodData
		for _, p := range pods {
			t, err := template.New("parser").Funcs(sprig.TxtFuncMap()).Parse(parserText)
			if err != nil {
				return nil, err
			}
			var sb strings.Builder
			if err := t.Execute(&sb, p.Annotations[DefaultAnnotationName]); err != nil {
				return nil, err
			}
			var d seedPodData
			if err := yaml.Unmarshal([]byte(sb.String()), &d); err != nil {
				return nil, err
			}
			parsed = append(parsed, d)
		}
		type dev struct{ DeviceId, DeviceIp, RankId string } //nolint:revive
		type srv struct {
			ServerId string //nolint:revive
			Devices  []dev
		}
		serverMap := map[string][]dev{}
		for _, d := range parsed {
			for _, x := range d.Devices {
				serverMap[d.ServerId] = append(serverMap[d.ServerId], dev{DeviceId: x.DeviceId, DeviceIp: x.DeviceIp})
			}
		}
		ids := make([]string, 0, len(serverMap))
		for id := range serverMap {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		rank := 0
		var servers []srv
		for _, id := range ids {
			devs := serverMap[id]
			sort.Slice(devs, func(i, j int) bool { return devs[i].DeviceId < devs[j].DeviceId })
			for i := range devs {
				devs[i].RankId = strconv.Itoa(rank)
				rank++
			}
			servers = append(servers, srv{ServerId: id, Devices: devs})
		}
		t, err := template.New("rt").Funcs(sprig.TxtFuncMap()).Parse(rtText)
		if err != nil {
			return nil, err
		}
		var sb strings.Builder
		data := map[string]any{"Status": "completed", "ServerCount": len(servers), "TotalDevices": rank, "Timestamp": "", "Servers": servers}
		if err := t.Execute(&sb, data); err != nil {
			return nil, err
		}
		out[name] = sb.String()
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
