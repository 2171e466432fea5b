// The Planner's memory of one owner: parsed pods, rendered groups, and the order of the
// previous call's groups, reused while what they were made from is unchanged.

package ranktable

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/internal/canonhash"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

type podEntry struct {
	owner                                     types.UID
	namespace, name, key                      string
	resourceVersion                           string
	level                                     Level
	grouping                                  Grouping
	group                                     GroupKey
	missing                                   bool // no annotation (or an empty one)
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

// podRef is one pod of a group in the current call; entry is nil when the pod has no
// annotation.
type podRef struct {
	pod   *corev1.Pod
	entry *podEntry
}

func (r podRef) key() string {
	if r.entry != nil {
		return r.entry.key
	}
	return r.pod.Namespace + "/" + r.pod.Name
}

type groupEntry struct {
	owner             types.UID
	key               GroupKey
	ownerName, cmName string
	cmValid           bool     // cmName is a valid ConfigMap name
	refs              []podRef // the current call's pods
	seen              uint64

	// The rendered table, valid when rendered is set, for tmpl, opts, limit and the
	// members (sorted by UID).
	rendered                    bool
	tmpl                        *Template
	opts                        BuildOptions
	limit                       int
	members, scratch            []memberSig
	content, podsHash, contHash string
	err                         error
	errReason                   kplan.Reason // ReasonBuildFailed or ReasonRenderFailed, with err
	doneMsg                     string       // GroupStatus.Message of the rendered table

	// zeroMsg is GroupStatus.Message while the group expects no pods.
	zeroMsg string

	// verified is the existing ConfigMap last found equal to the desired one.
	verified verifiedCM
}

type memberSig struct {
	uid types.UID
	gen uint64
}

func (e *podEntry) member() Member {
	return Member{Pod: e.key, Data: e.data, PodIP: e.podIP, NodeName: e.nodeName, Role: e.role,
		RoleID: e.roleID, Entry: e.entry, RankIndex: e.rankIndex}
}

// unchangedPod returns the cached entry of pod when the pod has the resourceVersion
// the entry was made from (the API server changes it on every write) and nothing else
// the entry depends on changed; nil otherwise. It costs a map lookup and string
// comparisons, no allocation.
func (p *ownerPlanner) unchangedPod(pod *corev1.Pod, owner types.UID, t *Template, level Level, g Grouping) *podEntry {
	e := p.pods[pod.UID]
	if e == nil || pod.ResourceVersion == "" || e.resourceVersion != pod.ResourceVersion || e.tmpl != t ||
		e.owner != owner || e.level != level || e.grouping != g || e.name != pod.Name || e.namespace != pod.Namespace {
		return nil
	}
	return e
}

// parsePod returns the cached entry of pod (in group k), re-parsing when anything
// read from the pod or the template changed. An unchanged pod costs string
// comparisons, no allocation.
func (p *ownerPlanner) parsePod(pod *corev1.Pod, owner types.UID, t *Template, level Level, g Grouping, k GroupKey) *podEntry {
	ann := pod.Annotations[t.AnnotationName]
	podIP, node := pod.Status.PodIP, pod.Spec.NodeName
	role, roleID, entry := pod.Labels[g.RoleLabel], pod.Labels[g.RoleIDLabel], pod.Labels[g.EntryLabel] == "true"
	ri := rankIndex(pod)
	if old, ok := p.pods[pod.UID]; ok && old.tmpl == t && old.owner == owner && old.annotation == ann &&
		old.name == pod.Name && old.namespace == pod.Namespace && old.podIP == podIP &&
		old.nodeName == node && old.role == role && old.roleID == roleID && old.entry == entry && old.rankIndex == ri {
		old.resourceVersion, old.level, old.grouping, old.group = pod.ResourceVersion, level, g, k
		return old
	}
	p.gen++ // a new parse generation, distinct from every earlier one
	e := &podEntry{
		owner: owner, namespace: pod.Namespace, name: pod.Name, key: pod.Namespace + "/" + pod.Name,
		resourceVersion: pod.ResourceVersion, level: level, grouping: g, group: k,
		annotation: ann, missing: ann == "", podIP: podIP, nodeName: node, role: role, roleID: roleID, entry: entry,
		rankIndex: ri, tmpl: t, gen: p.gen,
	}
	if !e.missing {
		e.data, e.err = parseChecked(t.parser, ann, infoOf(pod), &p.buf)
	}
	p.pods[pod.UID] = e
	return e
}

// renderGroup brings the cached table of ge up to date with its current pods (all
// with valid annotations), rebuilding it only when the template, the options or any
// member changed.
func (p *ownerPlanner) renderGroup(ge *groupEntry, t *Template, opts BuildOptions, limit int) {
	sigs := ge.scratch[:0]
	for _, r := range ge.refs {
		sigs = append(sigs, memberSig{uid: r.pod.UID, gen: r.entry.gen})
	}
	slices.SortFunc(sigs, func(a, b memberSig) int { return cmp.Compare(a.uid, b.uid) })
	if ge.rendered && ge.tmpl == t && ge.opts == opts && ge.limit == limit && slices.Equal(ge.members, sigs) {
		ge.scratch = sigs
		return
	}
	ge.scratch, ge.members = ge.members[:0], sigs
	ge.rendered, ge.tmpl, ge.opts, ge.limit = true, t, opts, limit
	ge.content, ge.contHash, ge.podsHash, ge.err, ge.errReason = "", "", "", nil, ""
	members := make([]Member, len(ge.refs))
	for i, r := range ge.refs {
		members[i] = r.entry.member()
	}
	table, err := build(members, opts, false)
	if err != nil {
		ge.err, ge.errReason = err, ReasonBuildFailed
		return
	}
	content, contHash, err := t.renderString(table, limit, &p.buf)
	if err != nil {
		ge.err, ge.errReason = err, ReasonRenderFailed
		return
	}
	ge.content, ge.contHash = content, contHash
	ge.doneMsg = fmt.Sprintf("group %s: the table of its %d pods is complete", ge.key, len(ge.refs))
	h := canonhash.New()
	for _, s := range sigs {
		h.String(string(s.uid))
	}
	ge.podsHash = h.Hex(8)
}

// sortOrder sorts the groups of the call now by key, reusing the previous call's
// order when the call has exactly the same groups.
func (p *ownerPlanner) sortOrder(now uint64) {
	same := len(p.order) == len(p.sorted)
	for i := 0; same && i < len(p.sorted); i++ {
		same = p.sorted[i].seen == now
	}
	if same {
		copy(p.order, p.sorted)
		return
	}
	slices.SortFunc(p.order, func(a, b *groupEntry) int { return compareKeys(a.key, b.key) })
	p.sorted = append(p.sorted[:0], p.order...)
}

// prune forgets owner's pods and groups not seen in the call now.
func (p *ownerPlanner) prune(owner types.UID, now uint64) {
	for k, e := range p.pods {
		if e.owner == owner && e.seen != now {
			delete(p.pods, k)
		}
	}
	for k, e := range p.groups {
		if k.owner == owner && e.seen != now {
			delete(p.groups, k)
		}
	}
}
