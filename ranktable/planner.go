package ranktable

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

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
			existing: map[string]*corev1.ConfigMap{}}
		p.owners[uid] = o
	}
	return o
}

// Plan computes the ranktable ConfigMaps of in.Owner. Rules:
//
//   - Pods are grouped by KeyOf at the level (the owner's kthena.io/ranktable-level
//     annotation overrides the template's); each group gets one ConfigMap named by
//     ConfigMapName, owned by the owner (controller=true).
//   - A group's table is rendered only when it has exactly the expected number of pods
//     and every one has a valid annotation; otherwise its ConfigMap holds an empty file
//     (never a partial table), so a pod that disappears resets the table.
//   - A group whose pods have an invalid annotation, whose table cannot be built or
//     rendered, whose ConfigMap belongs to another controller, or that waited longer
//     than in.Timeout is Failed; other groups are planned regardless.
//   - ConfigMaps carry AnnotationContentHash and AnnotationPodsHash; an existing
//     ConfigMap is updated only when data, these annotations or the labels differ.
//
// in is not changed; the result does not depend on the order of in.Pods or
// in.ConfigMaps. The error is non-nil only for an unusable input (nil template,
// owner without name, namespace or uid, unknown order, bad level annotation).
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
			res.Unmatched = append(res.Unmatched, UnmatchedPod{Pod: pod.Namespace + "/" + pod.Name, Reason: whyNotOwned(pod, in.Owner, g.OwnerLabel)})
			continue
		}
		e := p.unchangedPod(pod, owner, t, level, g)
		var k GroupKey
		if e != nil {
			k = e.group
		} else {
			k = KeyOf(pod, level, g)
		}
		ge := last
		if ge == nil || ge.key != k {
			if in.Expected != nil {
				if _, ok := in.Expected[k]; !ok {
					res.Unmatched = append(res.Unmatched, UnmatchedPod{Pod: pod.Namespace + "/" + pod.Name,
						Reason: fmt.Sprintf("its %s-level group %q is not in Expected", level, k)})
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
		return cmp.Or(natural.Compare(a.Pod, b.Pod), strings.Compare(a.Pod, b.Pod), strings.Compare(a.Reason, b.Reason))
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
			st.Phase, st.Error = PhaseFailed, fmt.Errorf("group %s: ConfigMap name %q is not a valid DNS-1123 subdomain", k, ge.cmName)
			res.Groups = append(res.Groups, st)
			res.Events = append(res.Events, failedEvent(in.Owner, st))
			clear(ge.refs)
			continue
		}
		cur := p.existing[st.ConfigMapName]
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
			st.Phase, st.Error = PhaseFailed, fmt.Errorf("ConfigMap %s/%s exists and is not controlled by %s %s", cur.Namespace, cur.Name, in.Owner.GVK.Kind, in.Owner.Name)
		case parseErr != nil:
			st.Phase, st.Error = PhaseFailed, parseErr
		case len(refs) > expected:
			st.Phase, st.Error = PhaseFailed, fmt.Errorf("group %s has %d pods, expected %d", k, len(refs), expected)
		case expected == 0:
			st.Phase = PhaseCompleted // scaled to zero: nothing to rank, the file stays empty
		case ready < expected:
			st.Phase = PhaseWaiting
			st.Absent = absentMembers(in.Owner.Namespace, k, level, g, refs, expected)
			since := latestCreation(cur, refs, func(r podRef) *corev1.Pod { return r.pod })
			if since.IsZero() {
				since = in.Now
			}
			if in.Timeout > 0 {
				left := in.Timeout - in.Now.Sub(since)
				if left <= 0 {
					st.Phase = PhaseFailed
					st.Error = fmt.Errorf("group %s: %w: %d of %d pods ready after %s%s", k, ErrTimeout, ready, expected, in.Timeout, absentText(st.Absent))
				} else if earliest == 0 || left < earliest {
					earliest = left
				}
			}
		default:
			p.renderGroup(ge, t, bopts, limit)
			if ge.err != nil {
				st.Phase, st.Error = PhaseFailed, fmt.Errorf("group %s: %w", k, ge.err)
			} else {
				st.Phase = PhaseCompleted
				content, contHash, podsHash = ge.content, ge.contHash, ge.podsHash
			}
		}
		clear(ge.refs) // keep the capacity, not the pods
		for _, pod := range missing {
			res.Events = append(res.Events, Event{Type: corev1.EventTypeNormal, Reason: ReasonAnnotationMissing,
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
		if dc.Action == ActionCreate {
			res.Events = append(res.Events, Event{Type: corev1.EventTypeNormal, Reason: ReasonConfigMapCreated, Object: cmRef,
				Message: fmt.Sprintf("ranktable ConfigMap for group %s", k)})
		}
		if st.Phase == PhaseCompleted && expected > 0 && dc.Action != ActionNone && (cur == nil || cur.Data[t.Filename] != content) {
			res.Events = append(res.Events, Event{Type: corev1.EventTypeNormal, Reason: ReasonGenerated, Object: cmRef,
				Message: fmt.Sprintf("ranktable for group %s: %d pods, content hash %s", k, ready, contHash)})
		}
		if st.Phase == PhaseFailed {
			res.Events = append(res.Events, failedEvent(in.Owner, st))
		}
	}
	clear(p.existing)
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

func failedEvent(o Owner, st GroupStatus) Event {
	return Event{Type: corev1.EventTypeWarning, Reason: ReasonGenerationFailed, Object: o.reference(), Message: st.Error.Error()}
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
