package ranktable

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/internal/natural"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Planner is Plan with memory: it keeps each pod's parsed annotation and each group's
// rendered table, so a reconcile after one pod changed parses that pod again and
// renders only its group again; an existing ConfigMap already found up to date at its
// UID and resourceVersion is not compared again. Its results always equal Plan's for
// the same input.
//
// It is safe for concurrent use: calls for different owners run in parallel, and calls
// for the same owner run one at a time, each reusing what the previous one computed. A
// Planner may be shared by several owners: each call forgets only the calling owner's
// pods and groups that are gone; call Forget when an owner is deleted.
type Planner struct {
	mu     sync.Mutex
	owners map[types.UID]*ownerPlanner
}

// ownerPlanner is a Planner's memory of one owner; mu serializes the owner's calls.
type ownerPlanner struct {
	mu       sync.Mutex
	gen      uint64
	pods     map[types.UID]*podEntry
	groups   map[groupCacheKey]*groupEntry
	order    []*groupEntry                // scratch: the groups of the current call
	sorted   []*groupEntry                // the previous call's groups in key order
	existing map[string]*corev1.ConfigMap // scratch: the current call's ConfigMaps by name
	claimed  map[string]struct{}          // scratch: the names of existing that are a group's
	buf      []byte                       // scratch for parser templates
}

// NewPlanner returns an empty Planner.
func NewPlanner() *Planner {
	return &Planner{owners: map[types.UID]*ownerPlanner{}}
}

// Forget drops everything the Planner keeps for owner (call it when the owner is
// deleted).
func (p *Planner) Forget(owner types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.owners, owner)
}

// owner returns the memory of owner, made on first use.
func (p *Planner) owner(uid types.UID) *ownerPlanner {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.owners == nil {
		p.owners = map[types.UID]*ownerPlanner{}
	}
	o := p.owners[uid]
	if o == nil {
		o = &ownerPlanner{pods: map[types.UID]*podEntry{}, groups: map[groupCacheKey]*groupEntry{},
			existing: map[string]*corev1.ConfigMap{}, claimed: map[string]struct{}{}}
		p.owners[uid] = o
	}
	return o
}

// Plan computes the ranktable ConfigMaps of in.Owner. Rules:
//
//   - Pods are grouped by KeyOf at the level (the owner's kthena.io/ranktable-level
//     annotation overrides the template's); each group gets one ConfigMap named by
//     ConfigMapName, owned by the owner (controller=true). Pods that do not belong
//     to the owner, lack a label their group needs, or (with in.Expected) are in a
//     group not expected are listed in Result.Unmatched with a reason.
//   - A group's table is rendered only when it has exactly the expected number of pods
//     and every one has a valid annotation; otherwise its ConfigMap holds an empty file
//     (never a partial table), so a pod that disappears resets the table.
//   - A group whose pods have an invalid annotation, whose table cannot be built or
//     rendered, whose ConfigMap belongs to another controller, or that waited longer
//     than in.Timeout is Failed; other groups are planned regardless.
//   - ConfigMaps carry AnnotationContentHash and AnnotationPodsHash; an existing
//     ConfigMap is updated only when data, these annotations or the labels differ.
//   - With in.Expected set, the owner's ranktable ConfigMaps of groups not expected
//     are deleted (kplan.ActionDelete); without it nothing is deleted.
//   - Every group has a Reason and Message a reconciler can set on a condition as
//     they are.
//
// in is not changed; the result does not depend on the order of in.Pods or
// in.ConfigMaps. The error is non-nil only for an unusable input (nil template,
// owner without name, namespace or uid, unknown order, bad level annotation, an
// Expected key no pod can match or a negative count).
func (p *Planner) Plan(in Input) (Result, error) {
	level, err := in.check()
	if err != nil {
		return Result{}, err
	}
	return p.owner(in.Owner.UID).plan(in, level)
}

func (p *ownerPlanner) plan(in Input, level Level) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	now := p.gen
	t := in.Template
	g := in.Grouping.withDefaults()
	limit := RenderOptions{MaxOutputBytes: in.MaxOutputBytes}.limit()
	order, _ := in.Order.normalize() // checked by Input.check
	bopts := BuildOptions{Order: order, Timestamp: in.Timestamp}
	owner := in.Owner.UID

	res := Result{Level: level}
	p.order = p.order[:0]
	var last *groupEntry
	touch := func(k GroupKey) *groupEntry {
		if last != nil && last.key == k {
			return last
		}
		ge := p.groups[groupCacheKey{owner, k}]
		if ge == nil {
			ge = &groupEntry{owner: owner, key: k}
			p.groups[groupCacheKey{owner, k}] = ge
		}
		if ge.seen != now {
			ge.seen = now
			ge.refs = ge.refs[:0]
			p.order = append(p.order, ge)
		}
		last = ge
		return ge
	}
	for k := range in.Expected {
		touch(k)
	}
	for _, pod := range in.Pods {
		if pod == nil || pod.DeletionTimestamp != nil {
			continue
		}
		if pod.Namespace != in.Owner.Namespace || !belongs(pod, in.Owner, g.OwnerLabel) {
			reason, msg := whyNotOwned(pod, in.Owner, g.OwnerLabel)
			res.Unmatched = append(res.Unmatched, UnmatchedPod{Pod: pod.Namespace + "/" + pod.Name, Reason: reason, Message: msg})
			continue
		}
		e := p.unchangedPod(pod, owner, t, level, g)
		var k GroupKey
		if e != nil {
			k = e.group
		} else {
			var lacks string
			if k, lacks = keyOf(pod, level, g); lacks != "" {
				res.Unmatched = append(res.Unmatched, UnmatchedPod{Pod: pod.Namespace + "/" + pod.Name, Reason: ReasonGroupingLabelMissing,
					Message: fmt.Sprintf("pod %s/%s %s", pod.Namespace, pod.Name, lacks)})
				continue
			}
		}
		ge := last
		if ge == nil || ge.key != k {
			if in.Expected != nil {
				if _, ok := in.Expected[k]; !ok {
					res.Unmatched = append(res.Unmatched, UnmatchedPod{Pod: pod.Namespace + "/" + pod.Name, Reason: ReasonGroupNotExpected,
						Message: fmt.Sprintf("pod %s/%s: its %s-level group %q is not in Expected", pod.Namespace, pod.Name, level, k)})
					continue
				}
			}
			ge = touch(k)
		}
		if e == nil {
			e = p.parsePod(pod, owner, t, level, g, k)
		}
		e.seen = now
		ref := podRef{pod: pod}
		if !e.missing {
			ref.entry = e
		}
		ge.refs = append(ge.refs, ref)
	}
	clear(p.existing)
	for _, cm := range in.ConfigMaps {
		if cm != nil && cm.Namespace == in.Owner.Namespace {
			p.existing[cm.Name] = cm
		}
	}
	p.sortOrder(now)

	res.Groups, res.ConfigMaps = make([]GroupStatus, 0, len(p.order)), make([]DesiredConfigMap, 0, len(p.order))
	slices.SortFunc(res.Unmatched, func(a, b UnmatchedPod) int {
		return cmp.Or(natural.Compare(a.Pod, b.Pod), strings.Compare(a.Pod, b.Pod), strings.Compare(string(a.Reason), string(b.Reason)),
			strings.Compare(a.Message, b.Message))
	})
	var earliest time.Duration
	for _, ge := range p.order {
		k, refs := ge.key, ge.refs
		expected := len(refs)
		if in.Expected != nil {
			expected = in.Expected[k]
		}
		if ge.cmName == "" || ge.ownerName != in.Owner.Name {
			ge.ownerName, ge.cmName = in.Owner.Name, ConfigMapName(in.Owner.Name, k)
			ge.cmValid = isDNSSubdomain(ge.cmName)
		}
		st := GroupStatus{Group: k, ConfigMapName: ge.cmName, Pods: len(refs), Expected: expected}
		if !ge.cmValid {
			// ConfigMapName always gives a valid name; never hand out one that is not.
			st.Phase, st.Reason = PhaseFailed, ReasonInvalidConfigMapName
			st.Error = fmt.Errorf("group %s: ConfigMap name %q is not a valid DNS-1123 subdomain", k, ge.cmName)
			st.Message = st.Error.Error()
			res.Groups = append(res.Groups, st)
			res.Events = append(res.Events, failedEvent(in.Owner, st))
			clear(ge.refs)
			continue
		}
		cur := p.existing[st.ConfigMapName]
		if cur != nil {
			p.claimed[st.ConfigMapName] = struct{}{}
		}
		ready := 0
		for _, r := range refs {
			if r.entry != nil && r.entry.err == nil {
				ready++
			}
		}
		var parseErr error
		var missing []*corev1.Pod
		if ready < len(refs) {
			// Missing pods and the first parse error, in pod order.
			slices.SortFunc(refs, func(a, b podRef) int { return natural.Compare(a.key(), b.key()) })
			for _, r := range refs {
				switch {
				case r.entry == nil:
					st.Missing = append(st.Missing, r.key())
					missing = append(missing, r.pod)
				case r.entry.err != nil && parseErr == nil:
					parseErr = fmt.Errorf("pod %s: annotation %s: %w", r.entry.key, t.AnnotationName, r.entry.err)
				}
			}
		}
		content, contHash, podsHash := "", "", ""
		conflict := cur != nil && !metav1.IsControlledBy(cur, &in.Owner.ObjectMeta)
		switch {
		case conflict:
			st.Phase, st.Reason = PhaseFailed, ReasonConfigMapConflict
			st.Error = fmt.Errorf("ConfigMap %s/%s exists and is not controlled by %s %s", cur.Namespace, cur.Name, in.Owner.GVK.Kind, in.Owner.Name)
		case parseErr != nil:
			st.Phase, st.Reason, st.Error = PhaseFailed, ReasonInvalidAnnotation, parseErr
		case len(refs) > expected:
			st.Phase, st.Reason = PhaseFailed, ReasonTooManyPods
			st.Error = fmt.Errorf("group %s has %d pods, expected %d", k, len(refs), expected)
		case expected == 0:
			// Scaled to zero: nothing to rank, the file stays empty.
			st.Phase, st.Reason = PhaseCompleted, ReasonScaledToZero
			if ge.zeroMsg == "" {
				ge.zeroMsg = fmt.Sprintf("group %s expects no pods: its table is empty", k)
			}
			st.Message = ge.zeroMsg
		case ready < expected:
			st.Phase = PhaseWaiting
			st.Absent = absentMembers(in.Owner.Namespace, k, level, g, refs, expected)
			if len(refs) < expected {
				st.Reason = ReasonWaitingForPods
				st.Message = fmt.Sprintf("group %s: waiting for pods: %d of %d exist%s", k, len(refs), expected, waitText(t, st))
			} else {
				st.Reason = ReasonWaitingForAnnotations
				st.Message = fmt.Sprintf("group %s: waiting for annotations: %d of %d pods have one%s", k, ready, expected, waitText(t, st))
			}
			since := latestCreation(cur, refs, func(r podRef) *corev1.Pod { return r.pod })
			if since.IsZero() {
				since = in.Now
			}
			if in.Timeout > 0 {
				left := in.Timeout - in.Now.Sub(since)
				if left <= 0 {
					st.Phase, st.Reason = PhaseFailed, ReasonWaitTimedOut
					st.Error = fmt.Errorf("group %s: %w: %d of %d pods ready after %s%s", k, ErrTimeout, ready, expected, in.Timeout, absentText(st.Absent))
					st.Message = st.Error.Error() + missingText(t, st.Missing)
				} else if earliest == 0 || left < earliest {
					earliest = left
				}
			}
		default:
			p.renderGroup(ge, t, bopts, limit)
			if ge.err != nil {
				st.Phase, st.Reason, st.Error = PhaseFailed, ge.errReason, fmt.Errorf("group %s: %w", k, ge.err)
			} else {
				st.Phase, st.Reason, st.Message = PhaseCompleted, ReasonGenerated, ge.doneMsg
				content, contHash, podsHash = ge.content, ge.contHash, ge.podsHash
			}
		}
		if st.Error != nil && st.Message == "" {
			st.Message = st.Error.Error()
			if !strings.HasPrefix(st.Message, "group ") {
				st.Message = fmt.Sprintf("group %s: %s", k, st.Message)
			}
		}
		clear(ge.refs) // keep the capacity, not the pods
		for _, pod := range missing {
			res.Events = append(res.Events, kplan.Event{Type: corev1.EventTypeNormal, Reason: ReasonAnnotationMissing,
				Object:  corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
				Message: fmt.Sprintf("pod has no %s annotation yet (group %s)", t.AnnotationName, k)})
		}
		res.Groups = append(res.Groups, st)
		if conflict {
			res.Events = append(res.Events, failedEvent(in.Owner, st))
			continue
		}
		dc := desired(in.Owner, t, ge, cur, content, contHash, podsHash)
		res.ConfigMaps = append(res.ConfigMaps, dc)
		cmRef := corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: in.Owner.Namespace, Name: st.ConfigMapName}
		if cur != nil {
			cmRef.UID = cur.UID
		}
		if dc.Action == kplan.ActionCreate {
			res.Events = append(res.Events, kplan.Event{Type: corev1.EventTypeNormal, Reason: ReasonConfigMapCreated, Object: cmRef,
				Message: fmt.Sprintf("ranktable ConfigMap for group %s", k)})
		}
		if st.Phase == PhaseCompleted && expected > 0 && dc.Action != kplan.ActionNone && (cur == nil || cur.Data[t.Filename] != content) {
			res.Events = append(res.Events, kplan.Event{Type: corev1.EventTypeNormal, Reason: ReasonGenerated, Object: cmRef,
				Message: fmt.Sprintf("ranktable for group %s: %d pods, content hash %s", k, ready, contHash)})
		}
		if st.Phase == PhaseFailed {
			res.Events = append(res.Events, failedEvent(in.Owner, st))
		}
	}
	if in.Expected != nil {
		res.ConfigMaps, res.Events = p.deletions(in.Owner, res)
	}
	clear(p.existing)
	clear(p.claimed)
	for _, st := range res.Groups {
		if st.Phase == PhaseWaiting {
			res.RequeueAfter = cmp.Or(in.RequeueAfter, defaultRequeueAfter)
			if earliest > 0 && earliest < res.RequeueAfter {
				res.RequeueAfter = earliest
			}
			break
		}
	}
	p.prune(owner, now)
	return res, nil
}

func failedEvent(o Owner, st GroupStatus) kplan.Event {
	return kplan.Event{Type: corev1.EventTypeWarning, Reason: ReasonGenerationFailed, Object: o.reference(), Message: st.Message}
}

// deletions appends to res's ConfigMaps and events the deletion of every existing
// ConfigMap of no group (in p.existing, not in p.claimed) that the owner controls and
// that carries the ranktable label, in name order.
func (p *ownerPlanner) deletions(o Owner, res Result) ([]DesiredConfigMap, []kplan.Event) {
	var names []string
	for name, cm := range p.existing {
		if _, ok := p.claimed[name]; ok || cm.DeletionTimestamp != nil || cm.Labels[LabelComponent] != componentValue {
			continue
		}
		if c := metav1.GetControllerOfNoCopy(cm); c != nil && c.UID == o.UID {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		cm := p.existing[name]
		res.ConfigMaps = append(res.ConfigMaps, DesiredConfigMap{Action: kplan.ActionDelete, ConfigMap: cm})
		res.Events = append(res.Events, kplan.Event{Type: corev1.EventTypeNormal, Reason: ReasonConfigMapDeleted,
			Object:  corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name, UID: cm.UID},
			Message: "ranktable ConfigMap of no expected group"})
	}
	return res.ConfigMaps, res.Events
}

// waitText lists a waiting group's pods without the annotation and its absent
// members: "; without annotation A: ns/p, ...; absent: ...".
func waitText(t *Template, st GroupStatus) string {
	return missingText(t, st.Missing) + absentText(st.Absent)
}

// missingText names up to maxAbsentNamed pods without the annotation.
func missingText(t *Template, missing []string) string {
	if len(missing) == 0 {
		return ""
	}
	s := "; without annotation " + t.AnnotationName + ": " + strings.Join(missing[:min(len(missing), maxAbsentNamed)], ", ")
	if n := len(missing) - maxAbsentNamed; n > 0 {
		s += fmt.Sprintf(" and %d more", n)
	}
	return s
}

func latestCreation[T any](cm *corev1.ConfigMap, refs []T, pod func(T) *corev1.Pod) time.Time {
	var t time.Time
	if cm != nil {
		t = cm.CreationTimestamp.Time
	}
	for _, r := range refs {
		if c := pod(r).CreationTimestamp.Time; c.After(t) {
			t = c
		}
	}
	return t
}
