package rollout_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/rollout"
)

func summary(s rollout.RecoverStep) string {
	var b strings.Builder
	for _, r := range s.Replace {
		fmt.Fprintf(&b, "replace %s; ", r.For)
	}
	for _, r := range s.Swap {
		fmt.Fprintf(&b, "swap %s>%s; ", r.Old, r.New)
	}
	for _, r := range s.Release {
		fmt.Fprintf(&b, "release %s; ", r)
	}
	for _, r := range s.Cancel {
		fmt.Fprintf(&b, "cancel %s; ", r)
	}
	for _, w := range s.Waiting {
		fmt.Fprintf(&b, "wait %s (%s); ", w.Replica, w.Reason)
	}
	return strings.TrimSpace(b.String())
}

func TestPlanRecover(t *testing.T) {
	now := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	failed := rollout.State{Failed: true}
	pending := rollout.State{Healthy: true, UnreadySince: now.Add(-time.Minute)}
	tests := []struct {
		name     string
		replicas []rollout.Replica
		policy   rollout.RecoverPolicy
		want     string
	}{
		{"a failed replica gets a replacement",
			[]rollout.Replica{{Name: "a", Revision: "1", State: failed}}, rollout.RecoverPolicy{}, "replace a;"},
		// not ready since 1m ago, StartTimeout 1m: 1m >= 1m, timed out.
		{"a replica not ready for StartTimeout is replaced",
			[]rollout.Replica{{Name: "a", Revision: "1", State: pending}}, rollout.RecoverPolicy{StartTimeout: time.Minute}, "replace a;"},
		// not ready since 1m ago, StartTimeout 2m: not yet.
		{"a replica not ready for less than StartTimeout is left alone",
			[]rollout.Replica{{Name: "a", Revision: "1", State: pending}}, rollout.RecoverPolicy{StartTimeout: 2 * time.Minute}, ""},
		{"a replacement that is not ready yet waits",
			[]rollout.Replica{{Name: "a", Revision: "1", State: failed}, {Name: "b", Revision: "1", ReplacementFor: "a", State: pending}},
			rollout.RecoverPolicy{}, "wait b (ReplacementNotReady);"},
		{"a replacement whose failed replica recovered is cancelled",
			[]rollout.Replica{{Name: "a", Revision: "1", State: ready}, {Name: "b", Revision: "1", ReplacementFor: "a", State: pending}},
			rollout.RecoverPolicy{}, "cancel b;"},
		{"a replacement that failed itself is cancelled",
			[]rollout.Replica{{Name: "a", Revision: "1", State: failed}, {Name: "b", Revision: "1", ReplacementFor: "a", State: failed}},
			rollout.RecoverPolicy{}, "cancel b;"},
		{"delete-then-create releases and replaces in one step",
			[]rollout.Replica{{Name: "a", Revision: "1", State: failed}}, rollout.RecoverPolicy{Strategy: rollout.DeleteThenCreate}, "replace a; release a;"},
		{"a ready replacement whose failed replica is gone is swapped in alone",
			[]rollout.Replica{{Name: "b", Revision: "1", ReplacementFor: "a", State: ready}}, rollout.RecoverPolicy{}, "swap >b;"},
		{"NoRecover only reports",
			[]rollout.Replica{{Name: "a", Revision: "1", State: failed}}, rollout.RecoverPolicy{Strategy: rollout.NoRecover},
			"wait a (RecoveryDisabled);"},
		// MaxParallel 1 and one replacement (c for a) already in flight: b waits.
		{"MaxParallel counts replacements in flight",
			[]rollout.Replica{{Name: "a", Revision: "1", State: failed}, {Name: "b", Revision: "1", State: failed},
				{Name: "c", Revision: "1", ReplacementFor: "a", State: pending}},
			rollout.RecoverPolicy{MaxParallel: 1}, "wait b (RecoverQuotaExhausted); wait c (ReplacementNotReady);"},
		// Window 10m, MaxPerWindow 2; starts 5m and 20m ago: only the first is in the
		// window, so one more may start: a does, b waits.
		{"MaxPerWindow counts only starts inside the window",
			[]rollout.Replica{{Name: "a", Revision: "1", State: failed}, {Name: "b", Revision: "1", State: failed}},
			rollout.RecoverPolicy{MaxPerWindow: 2, Window: 10 * time.Minute, Started: []time.Time{now.Add(-5 * time.Minute), now.Add(-20 * time.Minute)}},
			"replace a; wait b (RecoverQuotaExhausted);"},
		{"a replacement gang with a member missing is not swapped in",
			[]rollout.Replica{
				{Name: "g", Revision: "1", Members: []rollout.Member{{Name: "g-0", State: failed}, {Name: "g-1", State: ready}}},
				{Name: "h", Revision: "1", ReplacementFor: "g", Members: []rollout.Member{{Name: "h-0", State: ready}, {Name: "h-1", Missing: true}}}},
			rollout.RecoverPolicy{}, "wait h (ReplacementNotReady);"},
		{"a replacement gang with fewer members than the failed one is not swapped in",
			[]rollout.Replica{
				{Name: "g", Revision: "1", Members: []rollout.Member{{Name: "g-0", State: failed}, {Name: "g-1", State: ready}}},
				{Name: "h", Revision: "1", ReplacementFor: "g", Members: []rollout.Member{{Name: "h-0", State: ready}}}},
			rollout.RecoverPolicy{}, "wait h (ReplacementNotReady);"},
		// member g-1 missing since 2m ago, GangMemberTimeout 2m: 2m >= 2m, the whole gang is replaced.
		{"a gang whose member is missing for GangMemberTimeout gets a whole replacement",
			[]rollout.Replica{{Name: "g", Revision: "1", Members: []rollout.Member{{Name: "g-0", State: ready},
				{Name: "g-1", Missing: true, State: rollout.State{UnreadySince: now.Add(-2 * time.Minute)}}}}},
			rollout.RecoverPolicy{GangMemberTimeout: 2 * time.Minute}, "replace g;"},
		// missing since 2m ago, GangMemberTimeout 5m: not yet.
		{"a gang whose member is missing for less than GangMemberTimeout waits",
			[]rollout.Replica{{Name: "g", Revision: "1", Members: []rollout.Member{{Name: "g-0", State: ready},
				{Name: "g-1", Missing: true, State: rollout.State{UnreadySince: now.Add(-2 * time.Minute)}}}}},
			rollout.RecoverPolicy{GangMemberTimeout: 5 * time.Minute}, ""},
		// swapped out 1m ago, ReleaseDelay 2m: 1m < 2m.
		{"a swapped-out replica is kept for ReleaseDelay",
			[]rollout.Replica{{Name: "a", Revision: "1", State: failed, SwappedAt: now.Add(-time.Minute)}},
			rollout.RecoverPolicy{ReleaseDelay: 2 * time.Minute}, "wait a (WaitingForReleaseDelay);"},
		// swapped out 2m ago, ReleaseDelay 2m: 2m >= 2m.
		{"a swapped-out replica is released after ReleaseDelay",
			[]rollout.Replica{{Name: "a", Revision: "1", State: failed, SwappedAt: now.Add(-2 * time.Minute)}},
			rollout.RecoverPolicy{ReleaseDelay: 2 * time.Minute}, "release a;"},
		{"a ready replacement gang is swapped in",
			[]rollout.Replica{
				{Name: "g", Revision: "1", Members: []rollout.Member{{Name: "g-0", State: failed}, {Name: "g-1", State: ready}}},
				{Name: "h", Revision: "1", ReplacementFor: "g", Members: []rollout.Member{{Name: "h-0", State: ready}, {Name: "h-1", State: ready}}}},
			rollout.RecoverPolicy{}, "swap g>h;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, err := rollout.PlanRecover(tt.replicas, tt.policy, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(step); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
			for _, rep := range step.Replace {
				// A gang's replacement names every member of the failed gang.
				for _, r := range tt.replicas {
					if r.Name == rep.For && len(rep.Members) != len(r.Members) {
						t.Fatalf("replacement for %s has members %v, want %d", r.Name, rep.Members, len(r.Members))
					}
				}
			}
		})
	}
}

func TestPlanRecoverRejectsBadInput(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		replicas []rollout.Replica
		policy   rollout.RecoverPolicy
		want     string
	}{
		{"an unknown strategy", nil, rollout.RecoverPolicy{Strategy: "Restart"}, "policy: strategy"},
		{"a negative quota", nil, rollout.RecoverPolicy{MaxParallel: -1}, "policy:"},
		{"a per-window cap without a window", nil, rollout.RecoverPolicy{MaxPerWindow: 2}, "policy: window: must be set when maxPerWindow is 2"},
		{"an empty name", []rollout.Replica{{}}, rollout.RecoverPolicy{}, "replicas: 1 without a name"},
		{"a name longer than MaxNameLength", []rollout.Replica{{Name: strings.Repeat("r", rollout.MaxNameLength+1)}}, rollout.RecoverPolicy{}, "longer than MaxNameLength"},
		{"a repeated name", []rollout.Replica{{Name: "a"}, {Name: "a"}}, rollout.RecoverPolicy{}, "replica a: name: repeated"},
		{"two replacements for one replica", []rollout.Replica{{Name: "a"}, {Name: "b", ReplacementFor: "a"}, {Name: "c", ReplacementFor: "a"}},
			rollout.RecoverPolicy{}, "replica c: replacementFor"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is rejected", func(t *testing.T) {
			_, err := rollout.PlanRecover(tt.replicas, tt.policy, now)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
