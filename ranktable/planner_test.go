package ranktable

import (
	"fmt"
	"github.com/kplan-dev/kplan"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/kplan-dev/kplan/internal/canonhash"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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
		switch d.Action {
		case kplan.ActionNone:
			continue
		case kplan.ActionDelete:
			delete(s.cms, d.ConfigMap.Name)
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
			if d.Action != kplan.ActionUpdate || !strings.Contains(d.ConfigMap.Data["ranktable.json"], "10.1.99.1") {
				t.Errorf("changed group: action %s", d.Action)
			}
			if unsafe.StringData(p.keptGroups()[groupCacheKey{o.UID, k}].content) == before[k] {
				t.Error("the changed group was not re-rendered")
			}
		default:
			if d.Action != kplan.ActionNone || d.ConfigMap != in.ConfigMaps[i] {
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
			if d.Action != kplan.ActionNone {
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
	res, err := NewPlanner().Plan(Input{Owner: o, Template: tm, Pods: pods, Grouping: designGrouping, Now: t0})
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
