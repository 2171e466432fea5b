package ranktable

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/internal/natural"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/exact"
)

// genMembers draws 1..6 pods on distinct servers with 1..16 distinct device ids each
// (ids drawn from 0..15 in random order) and unique device IPs.
func genMembers(t *rapid.T) []Member {
	n := rapid.IntRange(1, 6).Draw(t, "pods")
	servers := rapid.SliceOfNDistinct(rapid.IntRange(1, 40), n, n, rapid.ID[int]).Draw(t, "servers")
	out := make([]Member, n)
	ip := 0
	for i := range out {
		ids := rapid.SliceOfNDistinct(rapid.IntRange(0, 15), 1, 16, rapid.ID[int]).Draw(t, "ids")
		devs := make([]Device, len(ids))
		for j, id := range ids {
			ip++
			devs[j] = Device{ID: strconv.Itoa(id), IP: fmt.Sprintf("10.0.%d.%d", ip/200, 1+ip%200)}
		}
		name := fmt.Sprintf("p-%d", i)
		out[i] = Member{Pod: "default/" + name, RankIndex: -1, Role: "worker", RoleID: "worker-0",
			Data: PodData{PodName: name, ServerID: fmt.Sprintf("192.168.1.%d", servers[i]), Devices: devs}}
	}
	return out
}

func shuffled[T any](t *rapid.T, xs []T) []T {
	perm := rapid.Permutation(xs).Draw(t, "perm")
	return perm
}

func TestBuildProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genMembers(t)
		order := rapid.SampledFrom([]Order{Natural, Lexicographic, PodIndex}).Draw(t, "order")
		before := deepCopyMembers(members)
		table, err := Build(members, BuildOptions{Order: order})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, members); diff != "" {
			t.Fatalf("Build changed its input (-before +after):\n%s", diff)
		}
		want := map[string]bool{}
		for _, m := range members {
			for _, d := range m.Data.Devices {
				want[m.Data.ServerID+"/"+d.ID+"/"+d.IP] = true
			}
		}
		rank := 0
		idCmp := natural.Compare
		if order == Lexicographic {
			idCmp = func(a, b string) int { return map[bool]int{true: -1, false: 1}[a < b] }
		}
		for si, s := range table.Servers {
			if si > 0 && order != PodIndex && idCmp(table.Servers[si-1].ServerId, s.ServerId) >= 0 {
				t.Fatalf("servers out of %v order: %s then %s", order, table.Servers[si-1].ServerId, s.ServerId)
			}
			for di, d := range s.Devices {
				if d.RankId != strconv.Itoa(rank) || d.ClusterId != strconv.Itoa(rank+1) {
					t.Fatalf("device %d has rank %s, want %d", rank, d.RankId, rank)
				}
				if di > 0 && idCmp(s.Devices[di-1].DeviceId, d.DeviceId) >= 0 {
					t.Fatalf("devices out of order on %s", s.ServerId)
				}
				k := s.ServerId + "/" + d.DeviceId + "/" + d.DeviceIp
				if !want[k] {
					t.Fatalf("device %s appears twice or was never given", k)
				}
				delete(want, k)
				rank++
			}
		}
		if len(want) != 0 || table.TotalDevices != rank {
			t.Fatalf("devices left out: %v", want)
		}
		again, err := Build(shuffled(t, members), BuildOptions{Order: order})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(table, again); diff != "" {
			t.Fatalf("shuffled members gave another table (-first +shuffled):\n%s", diff)
		}
	})
}

func deepCopyMembers(ms []Member) []Member {
	out := make([]Member, len(ms))
	for i, m := range ms {
		out[i] = m
		out[i].Data.Devices = append([]Device(nil), m.Data.Devices...)
	}
	return out
}

// TestNativeRenderersEqualTheTemplates renders arbitrary tables (any strings, not only
// valid ones, and lists that need not agree with each other) with each native renderer
// and with text/template.
func TestNativeRenderersEqualTheTemplates(t *testing.T) {
	for _, cm := range LibraryConfigMaps() {
		if cm.Data[KeyRanktableTemplate] == "" {
			continue
		}
		tm := mustLibrary(t, cm.Name, LoadOptions{})
		if tm.native == nil {
			t.Fatalf("%s has no native renderer", cm.Name)
		}
		t.Run(cm.Name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				table := genTable(t)
				want, err := tm.tmpl.Execute(table, 1<<20, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, valid := tm.native(nil, table)
				if string(got) != string(want) {
					t.Fatalf("native output differs:\n%q\n%q", got, want)
				}
				if valid && !json.Valid(got) {
					t.Fatalf("native renderer vouched for invalid JSON:\n%s", got)
				}
			})
		})
	}
}

// genTable draws a table with every field set from arbitrary, printable or plain
// strings, some empty.
func genTable(t *rapid.T) *Table {
	str := rapid.OneOf(rapid.String(), rapid.StringMatching(`[ -~]{0,6}`), rapid.StringMatching(`[0-9a-z.<&]{0,6}`))
	role := rapid.OneOf(str, rapid.SampledFrom([]string{"prefill", "decode"}))
	table := &Table{Status: str.Draw(t, "status"), Timestamp: str.Draw(t, "timestamp"),
		ServerCount: rapid.Int().Draw(t, "count"), TotalDevices: rapid.Int().Draw(t, "total")}
	for i := rapid.IntRange(0, 3).Draw(t, "servers"); i > 0; i-- {
		s := Server{ServerId: str.Draw(t, "server"), HostIp: str.Draw(t, "host"), ContainerIp: str.Draw(t, "container"),
			SuperPodId: str.Draw(t, "superpod"), PodName: str.Draw(t, "pod"), NodeName: str.Draw(t, "node"), Role: role.Draw(t, "role")}
		for j := rapid.IntRange(0, 3).Draw(t, "devices"); j > 0; j-- {
			s.Devices = append(s.Devices, RankedDevice{DeviceId: str.Draw(t, "id"), DeviceIp: str.Draw(t, "ip"),
				SuperDeviceId: str.Draw(t, "superdevice"), RankId: str.Draw(t, "rank"), ClusterId: str.Draw(t, "cluster")})
		}
		table.Servers = append(table.Servers, s)
	}
	for i := rapid.IntRange(0, 2).Draw(t, "superpods"); i > 0; i-- {
		table.SuperPods = append(table.SuperPods, SuperPod{SuperPodId: str.Draw(t, "superpod id"),
			ServerIds: rapid.SliceOfN(str, 0, 3).Draw(t, "server ids")})
	}
	for i := rapid.IntRange(0, 3).Draw(t, "roles"); i > 0; i-- {
		table.Roles = append(table.Roles, RoleServers{Role: role.Draw(t, "role name"),
			Servers: rapid.SliceOfN(rapid.SampledFrom(append(table.Servers, Server{})), 0, 3).Draw(t, "role servers")})
	}
	return table
}

// genPods draws an owner's pods in 1..3 role replicas of 1..3 pods, some without
// annotations.
func genPods(t *rapid.T, o Owner) ([]*corev1.Pod, map[GroupKey]int) {
	var pods []*corev1.Pod
	exp := map[GroupKey]int{}
	for g := rapid.IntRange(1, 3).Draw(t, "groups"); g > 0; g-- {
		n := rapid.IntRange(1, 3).Draw(t, "pods")
		exp[GroupKey{fmt.Sprintf("%s-%d", o.Name, g), "worker-0"}] = n
		for k := 0; k < n; k++ {
			if rapid.IntRange(0, 5).Draw(t, "absent") == 0 {
				continue
			}
			pods = append(pods, kthenaPod(o, g, "worker-0", k, rapid.IntRange(0, 4).Draw(t, "ann") > 0, rapid.IntRange(1, 16).Draw(t, "devs")))
		}
	}
	return pods, exp
}

func TestPlanIsDeterministicAndPure(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	rapid.Check(t, func(t *rapid.T) {
		pods, exp := genPods(t, o)
		in := Input{Owner: o, Template: tm, Pods: pods, Expected: exp, Now: t0, Order: rapid.SampledFrom([]Order{Natural, PodIndex}).Draw(t, "order")}
		first, err := Plan(in)
		if err != nil {
			t.Fatal(err)
		}
		var cms []*corev1.ConfigMap
		for _, d := range first.ConfigMaps {
			if rapid.Bool().Draw(t, "exists") {
				cms = append(cms, d.ConfigMap)
			}
		}
		in.ConfigMaps = cms
		var frozen []*corev1.Pod
		for _, p := range pods {
			frozen = append(frozen, p.DeepCopy())
		}
		var frozenCMs []*corev1.ConfigMap
		for _, c := range cms {
			frozenCMs = append(frozenCMs, c.DeepCopy())
		}
		a, _ := Plan(in)
		in2 := in
		in2.Pods = shuffled(t, pods)
		in2.ConfigMaps = shuffled(t, cms)
		b, _ := Plan(in2)
		if !resultsEqual(a, b) {
			t.Fatal("shuffled input gave another plan")
		}
		checkReasons(t, a)
		if diff := cmp.Diff(frozen, pods, exact.Options); diff != "" {
			t.Fatalf("Plan changed its pods (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(frozenCMs, cms, exact.Options); diff != "" {
			t.Fatalf("Plan changed its ConfigMaps (-before +after):\n%s", diff)
		}
		for _, d := range a.ConfigMaps {
			if c := d.ConfigMap.Data["ranktable.json"]; c != "" && !json.Valid([]byte(c)) {
				t.Fatalf("invalid JSON in %s", d.ConfigMap.Name)
			}
		}
	})
}

// resultsEqual compares plans, errors by message.
func resultsEqual(a, b Result) bool {
	norm := func(r Result) string {
		for i := range r.Groups {
			if r.Groups[i].Error != nil {
				r.Groups[i].Error = fmt.Errorf("%s", r.Groups[i].Error.Error())
			}
		}
		x, _ := json.Marshal(struct {
			R Result
			E []string
		}{r, errStrings(r.Groups)})
		return string(x)
	}
	return norm(a) == norm(b)
}

func errStrings(gs []GroupStatus) []string {
	var out []string
	for _, g := range gs {
		if g.Error != nil {
			out = append(out, g.Error.Error())
		}
	}
	return out
}

// TestPlannerEqualsPlan is a state machine: pods are added, deleted, replaced and
// their annotations changed; after every step the long-lived Planner's result equals a
// fresh Plan's, and the plan is applied as the API server would (new resourceVersions
// for written ConfigMaps).
func TestPlannerEqualsPlan(t *testing.T) {
	o := testOwner("ms")
	templates := []*Template{mustLibrary(t, LibraryMindIERole, LoadOptions{}), withoutNative(mustLibrary(t, LibraryMindIEExtended, LoadOptions{}))}
	rapid.Check(t, func(t *rapid.T) {
		p := NewPlanner()
		tm, timestamp := templates[0], ""
		allGroups := map[GroupKey]int{{"ms-0", "worker-0"}: 2, {"ms-1", "worker-0"}: 2}
		exp := maps.Clone(allGroups)
		pods := map[string]*corev1.Pod{}
		var cms []*corev1.ConfigMap
		var srv apiServer
		rv := 0
		nextRV := func() string { rv++; return strconv.Itoa(rv) }
		check := func() {
			list := make([]*corev1.Pod, 0, len(pods))
			for _, k := range sortedPodNames(pods) {
				list = append(list, pods[k])
			}
			in := Input{Owner: o, Template: tm, Pods: list, ConfigMaps: cms, Expected: exp, Now: t0, Timestamp: timestamp}
			want, _ := Plan(in)
			got, err := p.Plan(in)
			if err != nil || !resultsEqual(got, want) {
				t.Fatalf("Planner result differs from Plan (err %v)", err)
			}
			checkReasons(t, got)
			for _, d := range got.ConfigMaps {
				if _, expected := exp[d.Group]; expected == (d.Action == kplan.ActionDelete) {
					t.Fatalf("ConfigMap %s of group %q: %s, expected groups %v", d.ConfigMap.Name, d.Group, d.Action, exp)
				}
			}
			cms = srv.apply(got)
			// Applied, the plan leaves exactly the expected groups' ConfigMaps.
			var wantCMs []string
			for k := range exp {
				wantCMs = append(wantCMs, ConfigMapName(o.Name, k))
			}
			slices.Sort(wantCMs)
			if have := sortedNames(srv.cms); !slices.Equal(have, wantCMs) {
				t.Fatalf("ConfigMaps %q after applying the plan, want %q", have, wantCMs)
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"switch template": func(t *rapid.T) {
				tm = rapid.SampledFrom(templates).Draw(t, "template")
				timestamp = rapid.SampledFrom([]string{"", "t1"}).Draw(t, "timestamp")
			},
			"delete a ConfigMap": func(t *rapid.T) {
				if len(srv.cms) == 0 {
					t.Skip("no ConfigMaps")
				}
				delete(srv.cms, rapid.SampledFrom(sortedNames(srv.cms)).Draw(t, "ConfigMap"))
				cms = cms[:0]
				for _, k := range sortedNames(srv.cms) {
					cms = append(cms, srv.cms[k])
				}
			},
			"add": func(t *rapid.T) {
				g, k := rapid.IntRange(0, 1).Draw(t, "g"), rapid.IntRange(0, 2).Draw(t, "k")
				np := kthenaPod(o, g, "worker-0", k, rapid.Bool().Draw(t, "ann"), rapid.IntRange(1, 8).Draw(t, "devs"))
				np.ResourceVersion = nextRV()
				pods[fmt.Sprint(g, k)] = np
			},
			"write without changes": func(t *rapid.T) {
				if len(pods) == 0 {
					t.Skip("no pods")
				}
				k := rapid.SampledFrom(sortedPodNames(pods)).Draw(t, "pod")
				np := pods[k].DeepCopy()
				np.ResourceVersion = nextRV()
				pods[k] = np
			},
			"move to the other group": func(t *rapid.T) {
				if len(pods) == 0 {
					t.Skip("no pods")
				}
				k := rapid.SampledFrom(sortedPodNames(pods)).Draw(t, "pod")
				np := pods[k].DeepCopy()
				np.Labels[LabelGroupName] = map[bool]string{true: "ms-0", false: "ms-1"}[np.Labels[LabelGroupName] == "ms-1"]
				np.ResourceVersion = nextRV()
				pods[k] = np
			},
			"expect one group fewer or all again": func(t *rapid.T) {
				if len(exp) == len(allGroups) {
					delete(exp, rapid.SampledFrom([]GroupKey{{"ms-0", "worker-0"}, {"ms-1", "worker-0"}}).Draw(t, "group"))
				} else {
					exp = maps.Clone(allGroups)
				}
			},
			"remove a grouping label": func(t *rapid.T) {
				if len(pods) == 0 {
					t.Skip("no pods")
				}
				k := rapid.SampledFrom(sortedPodNames(pods)).Draw(t, "pod")
				np := pods[k].DeepCopy()
				delete(np.Labels, rapid.SampledFrom([]string{LabelGroupName, LabelRoleID}).Draw(t, "label"))
				np.ResourceVersion = nextRV()
				pods[k] = np
			},
			"delete": func(t *rapid.T) {
				if len(pods) == 0 {
					t.Skip("no pods")
				}
				delete(pods, rapid.SampledFrom(sortedPodNames(pods)).Draw(t, "pod"))
			},
			"change annotation": func(t *rapid.T) {
				if len(pods) == 0 {
					t.Skip("no pods")
				}
				k := rapid.SampledFrom(sortedPodNames(pods)).Draw(t, "pod")
				np := pods[k].DeepCopy()
				if np.Annotations == nil {
					np.Annotations = map[string]string{}
				}
				np.Annotations[DefaultAnnotationName] = designAnnotation(np.Name, rapid.SampledFrom([]string{"192.168.9.1", "192.168.9.2", "bad id!"}).Draw(t, "server"),
					"10.9.9.1", "10.9.9.2")
				if rapid.IntRange(0, 4).Draw(t, "without resourceVersion") > 0 {
					np.ResourceVersion = nextRV()
				} else {
					np.ResourceVersion = ""
				}
				pods[k] = np
			},
			"": func(t *rapid.T) { check() },
		})
	})
}

func sortedPodNames(m map[string]*corev1.Pod) []string {
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
