package ranktable

import (
	"fmt"
	"github.com/google/go-cmp/cmp"
	"sync"
	"testing"
	"time"
)

// mutatingTemplate calls every function that takes a list or dict on every list of
// the table: none may change the table.
const mutatingTemplate = `{{- range .SuperPods }}
{{- $a := sortAlpha .ServerIds }}{{ $b := reverse .ServerIds }}{{ $c := uniq .ServerIds }}
{{- $d := without .ServerIds "s1" }}{{ $e := compact .ServerIds }}{{ $f := slice .ServerIds 0 1 }}
{{- $g := append .ServerIds "x" }}{{ $h := prepend .ServerIds "x" }}{{ $i := concat .ServerIds (list "y") }}
{{- $j := chunk 1 .ServerIds }}{{ $k := rest .ServerIds }}{{ $l := initial .ServerIds }}
{{- $m := deepCopy .ServerIds }}{{ $n := toStrings .ServerIds }}{{ $o := mustPush .ServerIds "z" }}
{{- $p := join "," .ServerIds }}{{ $q := has "s1" .ServerIds }}{{ $r := first .ServerIds }}
{{- end }}
{{- $s := sortAlpha (list "b" "a") }}{{ $srv := reverse .Servers }}{{ $u := uniq .Servers }}
{{- $v := deepCopy .Servers }}{{ $w := toJson . }}{{ $x := dict "t" . }}{{ $_ := set $x "u" .Servers }}
{{- $y := merge (dict) (dict "s" .Servers) }}{{ $z := without .Roles }}
{{- range .Servers }}{{ $d := sortAlpha (pluck "x" (dict "x" .ServerId)) }}{{ $e := reverse .Devices }}{{ end -}}
{"ok": true}`

func mutationTable() *Table {
	return &Table{
		Status: "completed", ServerCount: 3, TotalDevices: 3,
		Servers: []Server{
			{ServerId: "s3", Devices: []RankedDevice{{DeviceId: "1", DeviceIp: "10.0.0.3", RankId: "0"}}},
			{ServerId: "s1", Devices: []RankedDevice{{DeviceId: "0", DeviceIp: "10.0.0.1", RankId: "1"}}},
			{ServerId: "s2", Devices: []RankedDevice{{DeviceId: "0", DeviceIp: "10.0.0.2", RankId: "2"}}},
		},
		SuperPods: []SuperPod{{SuperPodId: "0", ServerIds: []string{"s3", "s1", "s2"}}},
		Roles:     []RoleServers{{Role: "prefill"}},
	}
}

// TestRenderDoesNotChangeTheTable renders one table from many goroutines with every
// sorting or list-building function (run with -race) and compares it before and after.
func TestRenderDoesNotChangeTheTable(t *testing.T) {
	d := validRTData()
	d[KeyRanktableTemplate] = mutatingTemplate
	tm, err := LoadTemplate(rtCM(d), nil, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	table := mutationTable()
	want := mutationTable()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, err := tm.Render(table, RenderOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, table); diff != "" {
		t.Fatalf("the table changed (-want +got):\n%s", diff)
	}
}

// TestPlannerOwnersDoNotWaitForEachOther: while owner A's template runs for long
// (within a raised budget), owner B's Plan on the same Planner returns. An attempt
// in which A finished before B started proves nothing (a fast machine, or B's
// goroutine scheduled late); it is repeated with a template that runs longer.
func TestPlannerOwnersDoNotWaitForEachOther(t *testing.T) {
	fast := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	for attempt, n := range []int{1000, 2000, 4000} {
		slow := validRTData()
		// About 4n^2 units of work: most of the raised budget, taking a while.
		slow[KeyRanktableTemplate] = fmt.Sprintf(`{{ $l := until %d }}{{ range $l }}{{ range $l }}{{ $x := 1 }}{{ end }}{{ end }}{"slow": true}`, n)
		slowTm, err := LoadTemplate(rtCM(slow), nil, LoadOptions{MaxTemplateWork: int64(8 * n * n)})
		if err != nil {
			t.Fatal(err)
		}
		a, b := testOwner("slow"), testOwner("fast")
		p := NewPlanner()
		aStarted, aDone := make(chan struct{}), make(chan time.Time, 1)
		go func() {
			close(aStarted)
			res, err := p.Plan(Input{Owner: a, Template: slowTm, Pods: designPods(a), Grouping: designGrouping, Now: t0})
			if err != nil || res.Groups[0].Phase != PhaseCompleted {
				t.Errorf("slow owner: %v %+v", err, res.Groups)
			}
			aDone <- time.Now()
		}()
		<-aStarted
		time.Sleep(20 * time.Millisecond) // A is rendering
		bStart := time.Now()
		res, err := p.Plan(Input{Owner: b, Template: fast, Pods: designPods(b), Grouping: designGrouping, Now: t0})
		bDone := time.Now()
		if err != nil || res.Groups[0].Phase != PhaseCompleted {
			t.Fatalf("fast owner: %v %+v", err, res.Groups)
		}
		aEnd := <-aDone
		if aEnd.Before(bStart) {
			t.Logf("attempt %d: owner A finished before owner B started; trying a slower template", attempt+1)
			continue
		}
		if !bDone.Before(aEnd) {
			t.Fatalf("owner B finished %s after the slow owner A: it waited for A", bDone.Sub(aEnd))
		}
		t.Logf("owner B finished %s before owner A", aEnd.Sub(bDone))
		return
	}
	t.Fatal("owner A finished before owner B started in every attempt: the test proved nothing")
}

// TestPlannerSameOwnerConcurrently: concurrent Plan calls for one owner (and for
// others) all return what Plan returns, and the cache stays correct afterwards.
func TestPlannerSameOwnerConcurrently(t *testing.T) {
	parser := withoutNative(mustLibrary(t, LibraryMindIERole, LoadOptions{}))
	p := NewPlanner()
	owners := []Owner{testOwner("one"), testOwner("two")}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 8 {
		o := owners[i%2]
		in := Input{Owner: o, Template: parser, Pods: designPods(o), Grouping: designGrouping, Now: t0}
		want, _ := Plan(in)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				got, err := p.Plan(in)
				if err != nil || !resultsEqual(got, want) {
					errs <- "a concurrent Plan differs from Plan for " + o.Name
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if n := p.keptPods(); n != 4 {
		t.Fatalf("kept %d pods, want 4", n)
	}
}
