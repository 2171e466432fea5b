package clustertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/clustertest"
	"github.com/kplan-dev/kplan/rollout"
)

// dsComparison is one observed state of a DisaggregatedSet update with each
// role's decision: the DisaggregatedSet controller's (its LeaderWorkerSets'
// replicas by revision) and kplan's (PlanLockstep's step for the role).
type dsComparison struct {
	groups string
	roles  []string
	ds     map[string]lwsDecision
	kplan  map[string]lwsDecision
	steps  map[string]rollout.Step
	// drained lists the roles whose old LeaderWorkerSet the controller has
	// already scaled to 0 while their old groups still run in the state.
	drained []string
	// newStable: the controller counts the new revision stable (dsState.newStable).
	newStable bool
}

func (c dsComparison) differs() bool {
	for _, r := range c.roles {
		if c.ds[r] != c.kplan[r] {
			return true
		}
	}
	return false
}

func (c dsComparison) String() string {
	var parts []string
	for _, r := range c.roles {
		parts = append(parts, fmt.Sprintf("%s: DS %s, kplan %s %s", r, c.ds[r], c.kplan[r], stepSummary(c.steps[r])))
	}
	mark := ""
	if c.differs() {
		mark = "  <- differs"
	}
	return fmt.Sprintf("%-36s %s%s", c.groups, strings.Join(parts, "; "), mark)
}

// dsLockstepRoles models an observed state as kplan's lockstep roles: each role's
// groups of both revisions are its gang replicas, with the DisaggregatedSet's
// default budget per role (maxSurge 1, maxUnavailable 0).
func dsLockstepRoles(s dsState, roles []dsRole) []rollout.Role {
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	var out []rollout.Role
	for _, role := range roles {
		st := rollout.Strategy{Mode: rollout.Gang, TargetRevision: newRevision, Replicas: role.replicas,
			MaxUnavailable: &zero, MaxSurge: &one, History: []string{oldRevision, newRevision}}
		for w := range role.size {
			st.Columns = append(st.Columns, strconv.Itoa(w))
		}
		var reps []rollout.Replica
		for _, k := range slices.SortedFunc(mapsKeys(s.groups), func(x, y dsGroupKey) int {
			if x.rev != y.rev {
				return int(x.rev) - int(y.rev)
			}
			return x.index - y.index
		}) {
			if k.role != role.name {
				continue
			}
			one := lwsState{groups: map[int]map[int]lwsMember{k.index: s.groups[k]}}
			for _, r := range kplanReplicas(fmt.Sprintf("%s-%c", role.name, k.rev), one, role.size) {
				if k.rev == 'a' {
					r.Revision = oldRevision
				}
				reps = append(reps, r)
			}
		}
		out = append(out, rollout.Role{Name: role.name, Replicas: reps, Strategy: st})
	}
	return out
}

// TestDisaggregatedSetUpdatePrediction records a DisaggregatedSet update (prefill:
// 2 groups of 2, decode: 1 group of 2, a new image in both roles) and compares
// each observed state's decision with kplan's PlanLockstep.
func TestDisaggregatedSetUpdatePrediction(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, ctx, "ds-predict")
	roles := []dsRole{{"prefill", 2, 2}, {"decode", 1, 2}}
	const name = "pd"
	if err := cluster.Client.Create(ctx, dsObject(ns, name, "engine:v1", roles...)); err != nil {
		t.Fatal(err)
	}
	oldRev := waitPodsReady(t, ctx, ns, client.MatchingLabels{clustertest.LabelDisaggregatedSetName: name}, 6)[0].Labels[clustertest.LabelDisaggregatedSetRevision]
	rec := recordDS(t, ctx, ns, name, 2, oldRev)
	eventually(t, ctx, 10*time.Second, "the watch sees every group", func(ctx context.Context) (bool, string, error) {
		s := rec.current()
		key := s.groupsKey(2)
		return key == "decode a0:AA | prefill a0:AA a1:AA", key, nil
	})
	rec.begin()
	spec := dsObject(ns, name, "engine:v2", roles...).Object["spec"]
	b, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(clustertest.DisaggregatedSetGVK)
	obj.SetNamespace(ns)
	obj.SetName(name)
	if err := cluster.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, b)); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, 120*time.Second, "the update done", func(ctx context.Context) (bool, string, error) {
		s := rec.current()
		key := s.groupsKey(2)
		return key == "decode b0:BB | prefill b0:BB b1:BB" && s.replicas["prefill"]['a'] == 0 && s.replicas["decode"]['a'] == 0,
			fmt.Sprintf("%s replicas %v", key, s.replicas), nil
	})
	runs, err := rec.stop()
	if err != nil {
		t.Fatal(err)
	}
	var cmp []dsComparison
	for _, o := range runs {
		lr := dsLockstepRoles(o.state, roles)
		ls, err := rollout.PlanLockstep(lr)
		if err != nil {
			t.Fatalf("state %s: %v", o.groups, err)
		}
		c := dsComparison{groups: o.groups, ds: map[string]lwsDecision{}, kplan: map[string]lwsDecision{}, steps: map[string]rollout.Step{}, newStable: o.state.newStable}
		for i, role := range roles {
			c.roles = append(c.roles, role.name)
			byRev := o.state.replicas[role.name]
			if byRev['a'] == 0 && slices.ContainsFunc(slices.Collect(mapsKeys(o.state.groups)), func(k dsGroupKey) bool {
				return k.role == role.name && k.rev == 'a'
			}) {
				c.drained = append(c.drained, role.name)
			}
			c.ds[role.name] = lwsDecision{total: byRev['a'] + byRev['b'], updated: byRev['b']}
			c.kplan[role.name] = kplanDecision(lr[i].Replicas, ls.Roles[i].Step)
			c.steps[role.name] = ls.Roles[i].Step
		}
		cmp = append(cmp, c)
	}
	var lines []string
	observed := map[diffKind]int{}
	for _, c := range cmp {
		lines = append(lines, c.String())
		for _, r := range c.roles {
			other := slices.ContainsFunc(c.drained, func(d string) bool { return d != r })
			if k := dsKind(c.ds[r], c.kplan[r], other, c.newStable); k != "" {
				observed[k]++
				if strings.HasPrefix(string(k), "unexplained") {
					t.Errorf("role %s in state %s: %s", r, c.groups, k)
				}
			}
		}
	}
	t.Logf("%d states:\n%s", len(cmp), strings.Join(lines, "\n"))
	// PlanLockstep drains old groups in lockstep as the controller does, so
	// OldKeptForOtherRoles is neither required nor allowed: seeing it again is
	// a regression.
	checkKinds(t, observed, nil, []diffKind{kindDrainThenScaleUp, kindDrainInFlight, kindNotStable})
	if last := cmp[len(cmp)-1]; last.differs() {
		t.Errorf("final state %s: the DisaggregatedSet controller and kplan disagree", last)
	}
}

// dsKind classifies a difference in one role between the DisaggregatedSet
// controller's decision and kplan's; "" when they agree. otherDrained: the
// controller has already scaled another role's old LeaderWorkerSet to 0 in
// this state (its old groups still run). newStable: the controller counts the
// new revision stable (its LeaderWorkerSets' status says every replica ready).
func dsKind(ds, kplan lwsDecision, otherDrained, newStable bool) diffKind {
	switch {
	case ds == kplan:
		return ""
	case ds.total > kplan.total && ds.updated == kplan.updated && otherDrained && kplan.total == kplan.updated:
		return kindDrainInFlight
	case ds.total > kplan.total && ds.updated == kplan.updated && !newStable:
		return kindNotStable
	case ds.total > kplan.total && ds.updated == kplan.updated:
		return kindOldKeptForOtherRoles
	case ds.total < kplan.total && ds.updated < kplan.updated:
		return kindDrainThenScaleUp
	}
	return diffKind(fmt.Sprintf("unexplained: DS %s, kplan %s", ds, kplan))
}
