package ranktable

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kplan-dev/kplan/internal/canonhash"
	"github.com/kplan-dev/kplan/internal/natural"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Planner is Plan with memory: it keeps each pod's parsed annotation (keyed by pod UID
// and everything read from the pod) and each group's rendered table (keyed by the
// template, the options and its pods' parse generations), so a reconcile after one pod
// changed re-parses that pod and re-renders only its group. Its results always equal
// Plan's for the same input. It is safe for concurrent use (calls are serialized);
// use one Planner per owner or share one.
type Planner struct {
	mu     sync.Mutex
	gen    uint64
	pods   map[types.UID]*podEntry
	groups map[groupCacheKey]*groupEntry
	buf    []byte
}

type podEntry struct {
	annotation, podIP, nodeName, role, roleID string
	entry                                     bool
	rankIndex                                 int
	tmpl                                      *Template
	data                                      PodData
	err                                       error
	gen                                       uint64
	seen                                      uint64
}

type groupCacheKey struct {
	owner types.UID
	key   GroupKey
}

type groupEntry struct {
	tmpl     *Template
	opts     BuildOptions
	limit    int
	members  []memberSig
	content  string
	podsHash string
	contHash string
	err      error
	seen     uint64
}

type memberSig struct {
	uid types.UID
	gen uint64
}

// NewPlanner returns an empty Planner.
func NewPlanner() *Planner {
	return &Planner{pods: map[types.UID]*podEntry{}, groups: map[groupCacheKey]*groupEntry{}}
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
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	now := p.gen
	t := in.Template
	g := in.Grouping.withDefaults()
	limit := RenderOptions{MaxOutputBytes: in.MaxOutputBytes}.limit()
	bopts := BuildOptions{Order: in.Order, Timestamp: in.Timestamp}

	type podRef struct {
		pod   *corev1.Pod
		key   string
		entry *podEntry // nil: annotation missing
	}
	groups := map[GroupKey][]podRef{}
	for k := range in.Expected {
		groups[k] = nil
	}
	for _, pod := range in.Pods {
		if pod == nil || pod.Namespace != in.Owner.Namespace || pod.DeletionTimestamp != nil || !ownedBy(pod, in.Owner) {
			continue
		}
		k := KeyOf(pod, level, g)
		if in.Expected != nil {
			if _, ok := in.Expected[k]; !ok {
				continue
			}
		}
		ref := podRef{pod: pod, key: pod.Namespace + "/" + pod.Name}
		if ann, ok := pod.Annotations[t.AnnotationName]; ok && ann != "" {
			ref.entry = p.parsePod(pod, t, g, ann, now)
		}
		groups[k] = append(groups[k], ref)
	}
	existing := map[string]*corev1.ConfigMap{}
	for _, cm := range in.ConfigMaps {
		if cm != nil && cm.Namespace == in.Owner.Namespace {
			existing[cm.Name] = cm
		}
	}
	keys := make([]GroupKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)

	res := Result{Level: level}
	var earliest time.Duration
	members := make([]Member, 0, 16)
	for _, k := range keys {
		refs := groups[k]
		slices.SortFunc(refs, func(a, b podRef) int { return natural.Compare(a.key, b.key) })
		expected := len(refs)
		if in.Expected != nil {
			expected = in.Expected[k]
		}
		st := GroupStatus{Group: k, ConfigMapName: ConfigMapName(in.Owner.Name, k), Pods: len(refs), Expected: expected}
		cur := existing[st.ConfigMapName]
		var parseErrs []error
		members = members[:0]
		sigs := make([]memberSig, 0, len(refs))
		for _, r := range refs {
			switch {
			case r.entry == nil:
				st.Missing = append(st.Missing, r.key)
			case r.entry.err != nil:
				parseErrs = append(parseErrs, fmt.Errorf("pod %s: annotation %s: %w", r.key, t.AnnotationName, r.entry.err))
			default:
				members = append(members, r.entry.member(r.key))
				sigs = append(sigs, memberSig{uid: r.pod.UID, gen: r.entry.gen})
			}
		}
		content, contHash, podsHash := "", "", ""
		conflict := cur != nil && !metav1.IsControlledBy(cur, &in.Owner.ObjectMeta)
		switch {
		case conflict:
			st.Phase, st.Error = PhaseFailed, fmt.Errorf("ConfigMap %s/%s exists and is not controlled by %s %s", cur.Namespace, cur.Name, in.Owner.GVK.Kind, in.Owner.Name)
		case len(parseErrs) > 0:
			st.Phase, st.Error = PhaseFailed, parseErrs[0]
		case len(refs) > expected:
			st.Phase, st.Error = PhaseFailed, fmt.Errorf("group %s has %d pods, expected %d", k, len(refs), expected)
		case len(members) < expected || expected == 0:
			st.Phase = PhaseWaiting
			since := latestCreation(cur, refs, func(r podRef) *corev1.Pod { return r.pod })
			if since.IsZero() {
				since = in.Now
			}
			if in.Timeout > 0 {
				left := in.Timeout - in.Now.Sub(since)
				if left <= 0 {
					st.Phase = PhaseFailed
					st.Error = fmt.Errorf("group %s: %w: %d of %d pods ready after %s", k, ErrTimeout, len(members), expected, in.Timeout)
				} else if earliest == 0 || left < earliest {
					earliest = left
				}
			}
		default:
			ge := p.renderGroup(in.Owner.UID, k, t, bopts, limit, members, sigs, now)
			if ge.err != nil {
				st.Phase, st.Error = PhaseFailed, fmt.Errorf("group %s: %w", k, ge.err)
			} else {
				st.Phase = PhaseCompleted
				content, contHash, podsHash = ge.content, ge.contHash, ge.podsHash
			}
		}
		for _, m := range st.Missing {
			res.Events = append(res.Events, Event{Type: corev1.EventTypeNormal, Reason: ReasonAnnotationMissing, Kind: "Pod", Object: m,
				Message: fmt.Sprintf("pod has no %s annotation yet (group %s)", t.AnnotationName, k)})
		}
		res.Groups = append(res.Groups, st)
		if conflict {
			res.Events = append(res.Events, failedEvent(in.Owner, st))
			continue
		}
		dc := p.desired(in.Owner, t, k, st.ConfigMapName, cur, content, contHash, podsHash)
		res.ConfigMaps = append(res.ConfigMaps, dc)
		if dc.Action == ActionCreate {
			res.Events = append(res.Events, Event{Type: corev1.EventTypeNormal, Reason: ReasonConfigMapCreated, Kind: "ConfigMap",
				Object: in.Owner.Namespace + "/" + st.ConfigMapName, Message: fmt.Sprintf("ranktable ConfigMap for group %s", k)})
		}
		if st.Phase == PhaseCompleted && (cur == nil || cur.Data[t.Filename] != content) {
			res.Events = append(res.Events, Event{Type: corev1.EventTypeNormal, Reason: ReasonGenerated, Kind: "ConfigMap",
				Object: in.Owner.Namespace + "/" + st.ConfigMapName, Message: fmt.Sprintf("ranktable for group %s: %d pods, content hash %s", k, len(members), contHash)})
		}
		if st.Phase == PhaseFailed {
			res.Events = append(res.Events, failedEvent(in.Owner, st))
		}
	}
	for _, st := range res.Groups {
		if st.Phase == PhaseWaiting {
			res.RequeueAfter = cmp.Or(in.RequeueAfter, DefaultRequeueAfter)
			if earliest > 0 && earliest < res.RequeueAfter {
				res.RequeueAfter = earliest
			}
			break
		}
	}
	p.prune(now)
	return res, nil
}

func failedEvent(o Owner, st GroupStatus) Event {
	return Event{Type: corev1.EventTypeWarning, Reason: ReasonGenerationFailed, Kind: o.GVK.Kind,
		Object: o.Namespace + "/" + o.Name, Message: st.Error.Error()}
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

func (e *podEntry) member(key string) Member {
	return Member{Pod: key, Data: e.data, PodIP: e.podIP, NodeName: e.nodeName, Role: e.role,
		RoleID: e.roleID, Entry: e.entry, RankIndex: e.rankIndex}
}

// parsePod returns the cached parse of pod, re-parsing when anything read from the pod
// or the template changed.
func (p *Planner) parsePod(pod *corev1.Pod, t *Template, g Grouping, ann string, now uint64) *podEntry {
	podIP, node := pod.Status.PodIP, pod.Spec.NodeName
	role, roleID, entry := pod.Labels[g.RoleLabel], pod.Labels[g.RoleIDLabel], pod.Labels[g.EntryLabel] == "true"
	ri := rankIndex(pod)
	if old, ok := p.pods[pod.UID]; ok && old.tmpl == t && old.annotation == ann && old.podIP == podIP &&
		old.nodeName == node && old.role == role && old.roleID == roleID && old.entry == entry && old.rankIndex == ri {
		old.seen = now
		return old
	}
	e := &podEntry{
		annotation: ann, podIP: podIP, nodeName: node, role: role, roleID: roleID, entry: entry,
		rankIndex: ri, tmpl: t, gen: now, seen: now,
	}
	e.data, e.err = parseChecked(t.parser, ann, &p.buf)
	p.pods[pod.UID] = e
	return e
}

// renderGroup returns the cached table of a group, rebuilding it when the template,
// the options or any member changed.
func (p *Planner) renderGroup(owner types.UID, k GroupKey, t *Template, opts BuildOptions, limit int, members []Member, sigs []memberSig, now uint64) *groupEntry {
	ck := groupCacheKey{owner: owner, key: k}
	slices.SortFunc(sigs, func(a, b memberSig) int { return cmp.Compare(a.uid, b.uid) })
	if old, ok := p.groups[ck]; ok && old.tmpl == t && old.opts == opts && old.limit == limit && slices.Equal(old.members, sigs) {
		old.seen = now
		return old
	}
	ge := &groupEntry{tmpl: t, opts: opts, limit: limit, members: sigs, seen: now}
	p.groups[ck] = ge
	table, err := build(members, opts, false)
	if err != nil {
		ge.err = err
		return ge
	}
	out, err := t.render(table, limit, p.buf)
	if err != nil {
		ge.err = err
		return ge
	}
	ge.content = string(out)
	p.buf = out[:0]
	ge.contHash = canonhash.Short(ge.content)
	h := canonhash.New()
	for _, s := range sigs {
		h.String(string(s.uid))
	}
	ge.podsHash = h.Hex(8)
	return ge
}

func (p *Planner) prune(now uint64) {
	for k, e := range p.pods {
		if e.seen != now {
			delete(p.pods, k)
		}
	}
	for k, e := range p.groups {
		if e.seen != now {
			delete(p.groups, k)
		}
	}
}

// desired builds the ConfigMap a group should have and the action to get there.
func (p *Planner) desired(o Owner, t *Template, k GroupKey, name string, cur *corev1.ConfigMap, content, contHash, podsHash string) DesiredConfigMap {
	labels := map[string]string{LabelComponent: componentValue}
	ann := map[string]string{AnnotationContentHash: contHash, AnnotationPodsHash: podsHash}
	if cur == nil {
		return DesiredConfigMap{Group: k, Action: ActionCreate, ConfigMap: &corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: o.Namespace, Labels: labels, Annotations: ann,
				OwnerReferences: []metav1.OwnerReference{ownerRef(o)},
			},
			Data: map[string]string{t.Filename: content},
		}}
	}
	same := len(cur.Data) == 1 && cur.Data[t.Filename] == content && len(cur.BinaryData) == 0 &&
		cur.Annotations[AnnotationContentHash] == contHash && cur.Annotations[AnnotationPodsHash] == podsHash &&
		cur.Labels[LabelComponent] == componentValue
	if _, ok := cur.Data[t.Filename]; !ok {
		same = false
	}
	if same {
		return DesiredConfigMap{Group: k, Action: ActionNone, ConfigMap: cur.DeepCopy()}
	}
	up := cur.DeepCopy()
	up.Data = map[string]string{t.Filename: content}
	up.BinaryData = nil
	if up.Labels == nil {
		up.Labels = map[string]string{}
	}
	up.Labels[LabelComponent] = componentValue
	if up.Annotations == nil {
		up.Annotations = map[string]string{}
	}
	up.Annotations[AnnotationContentHash] = contHash
	up.Annotations[AnnotationPodsHash] = podsHash
	return DesiredConfigMap{Group: k, Action: ActionUpdate, ConfigMap: up}
}
