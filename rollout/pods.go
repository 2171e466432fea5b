package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan/internal/natural"
)

// PodLabels names the pod labels [FromPods] reads.
type PodLabels struct {
	// Revision holds the pod's revision.
	Revision string
	// Gang groups pods into gang replicas named by its value; empty means every pod
	// is a replica of its own.
	Gang string
	// Column holds a single pod's column (group mode), or a gang member's column
	// ([Member].Column: its place in the gang); empty means none.
	Column string
	// Index holds the replica's index ([Replica].Index): a pod's ordinal (a
	// StatefulSet's pods carry it as apps.kubernetes.io/pod-index), a gang's
	// group index (every member carries the gang's), a row in group mode; a
	// non-negative 32-bit integer. Empty means none is read: every index is 0.
	Index string
	// DataRevision holds the revision of the data a pod serves (index, model,
	// LoRA adapter), read into [Replica].DataRevision; empty means none is read.
	DataRevision string
}

// PodAnnotations names the pod annotations [FromPods] reads for recovery
// ([PlanRecover]); a controller carrying out a [RecoverStep] writes them.
type PodAnnotations struct {
	// ReplacementFor holds, on the pods of a recovery replacement, the name of
	// the replica it replaces: read into [Replica].ReplacementFor (a gang's
	// from any member). Set it on the pods of a [Replacement]; remove it on a
	// [Swap].
	ReplacementFor string
	// SwappedAt holds, on the pods of a replica recovery swapped out, when
	// that happened (RFC 3339): read into [Replica].SwappedAt (a gang's: the
	// earliest its members carry). Set it on a [Swap].
	SwappedAt string
}

// DeletionCostAnnotation is read into [Replica.DeletionCost].
const DeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

var (
	// DefaultLabels reads the revision from the label StatefulSets, DaemonSets and
	// ControllerRevision-based controllers set.
	DefaultLabels = PodLabels{Revision: "controller-revision-hash"}
	// KthenaLabels reads kthena ModelServing pods: the revision, the serving group
	// as the gang, and the role as the column.
	KthenaLabels = PodLabels{
		Revision: "modelserving.volcano.sh/revision",
		Gang:     "modelserving.volcano.sh/group-name",
		Column:   "modelserving.volcano.sh/role",
	}
	// DefaultAnnotations are the recovery annotations [FromPods] reads unless
	// PodOptions.Annotations names others.
	DefaultAnnotations = PodAnnotations{
		ReplacementFor: "rollout.kplan.dev/replacement-for",
		SwappedAt:      "rollout.kplan.dev/swapped-at",
	}
)

// PodOptions configures [FromPods].
type PodOptions struct {
	// Labels names the labels to read; the zero value means [DefaultLabels].
	Labels PodLabels
	// Annotations names the recovery annotations to read; the zero value means
	// [DefaultAnnotations], and an empty key is not read.
	Annotations PodAnnotations
	// MinReadySeconds is how long a pod must be ready to be available; it must not
	// be negative. When it is above 0, Now must be set.
	MinReadySeconds int32
	// Now is the time availability is judged at.
	Now time.Time
	// Columns lists, in order, the columns every gang has: a gang's members are
	// put in this order, and a gang without a pod in one of them gets a member
	// there with Missing set (and no name), which [Plan] asks the caller to
	// create ([Repair].Missing). It needs Labels.Gang and Labels.Column; every
	// pod of a gang must carry one of them, and only one pod of a gang that is
	// not terminating may be in each. Pass the same list as the strategy's
	// Columns. Empty means a gang has the members it has pods for, in natural
	// name order, and none is missing. The columns must be non-empty and
	// unique, and the gangs found times the columns must not exceed
	// [MaxReplicas] (every missing pod becomes a member).
	Columns []string
	// MissingSince maps a gang name to when the caller first saw one of its members
	// missing; it becomes the missing members' UnreadySince.
	MissingSince map[string]time.Time
}

// FromPods builds replicas from pods: one per pod, or one per gang when
// opts.Labels.Gang is set. Pod state maps as follows: Ready is the PodReady
// condition; ReadySince / UnreadySince its last transition (UnreadySince falls
// back to the creation time); Available is Ready for MinReadySeconds at Now;
// Healthy is false while a container waits in CrashLoopBackOff, ImagePullBackOff,
// ErrImagePull or CreateContainerConfigError; Failed is phase Failed or Succeeded
// (the process exited); Lost is status reason NodeLost; Terminating is a deletion
// timestamp. Priority is spec.priority and DeletionCost the
// controller.kubernetes.io/pod-deletion-cost annotation. With
// opts.Labels.DataRevision set, DataRevision is that label (a gang's: the value
// all its pods carry, empty when they differ). With opts.Labels.Index set,
// Index is that label (a gang's: the one all its pods carry). ReplacementFor
// and SwappedAt are the recovery annotations (opts.Annotations), so the
// replicas feed [PlanRecover] as well as [Plan].
//
// A gang's revision is the one most of its members that are not terminating
// run (of all its members when every one is terminating; the newest by
// [CompareRevisions] on ties): a gang being recreated at a new revision, whose
// old pods are still going away, runs the new one. A member's Column is its
// pod's opts.Labels.Column. Members are in opts.Columns order, members a gang
// lacks included (Missing, named by their column only), or else in natural
// name order. Replicas are returned in natural name order. pods are not
// modified.
//
// Bad input is an error naming the pod (namespace/name) or gang and the label
// or annotation: a missing revision, gang or index label, an index that is not
// a non-negative 32-bit integer, a deletion cost that is not a 32-bit
// integer, a swapped-at time that is not RFC 3339, a column not in
// opts.Columns, and in a gang two pods in one column, or pods that disagree on
// the index or on the replica they replace.
func FromPods(pods []*corev1.Pod, opts PodOptions) ([]Replica, error) {
	if opts.Labels == (PodLabels{}) {
		opts.Labels = DefaultLabels
	}
	if opts.Annotations == (PodAnnotations{}) {
		opts.Annotations = DefaultAnnotations
	}
	if len(pods) > MaxReplicas {
		return nil, fmt.Errorf("pods: %d, more than MaxReplicas %d", len(pods), MaxReplicas)
	}
	rd, err := newPodReader(opts, pods)
	if err != nil {
		return nil, err
	}
	var out []Replica
	gangs := map[string]int{}
	var gangPods [][]*corev1.Pod // each gang's pods, by its position in out
	for _, pod := range pods {
		if pod == nil || rd.podError(pod) != nil {
			return nil, rd.podsError(pods) // order-independent (invalid.go)
		}
		var cost int64
		if v, ok := pod.Annotations[DeletionCostAnnotation]; ok {
			cost, _ = strconv.ParseInt(v, 10, 32) // podError checked it
		}
		var prio int32
		if pod.Spec.Priority != nil {
			prio = *pod.Spec.Priority
		}
		var data string
		if opts.Labels.DataRevision != "" {
			data = pod.Labels[opts.Labels.DataRevision]
		}
		index := rd.index(pod)
		replacementFor, swappedAt := rd.recovery(pod)
		if opts.Labels.Gang == "" {
			out = append(out, Replica{Name: pod.Name, Revision: pod.Labels[opts.Labels.Revision], DataRevision: data,
				State: podState(pod, opts), Priority: prio,
				DeletionCost: cost, Column: pod.Labels[opts.Labels.Column], Index: index,
				ReplacementFor: replacementFor, SwappedAt: swappedAt})
			continue
		}
		g := pod.Labels[opts.Labels.Gang]
		k, ok := gangs[g]
		if !ok {
			k = len(out)
			gangs[g] = k
			out = append(out, Replica{Name: g, DataRevision: data, Priority: prio, DeletionCost: cost})
			gangPods = append(gangPods, nil)
		}
		gangPods[k] = append(gangPods[k], pod)
		r := &out[k]
		if r.DataRevision != data {
			// Members serving different data: the gang serves no one data
			// revision, so a data release moves it.
			r.DataRevision = ""
		}
		r.Priority = max(r.Priority, prio)
		r.DeletionCost = max(r.DeletionCost, cost)
		r.SwappedAt = earliest(r.SwappedAt, swappedAt)
	}
	if opts.Labels.Gang == "" {
		slices.SortFunc(out, func(a, b Replica) int { return natural.Compare(a.Name, b.Name) })
		return out, nil
	}
	// The gangs' members, and their own fields, in name order with members in
	// name order, so that an error is the same for any order of pods.
	for k := range out {
		slices.SortFunc(gangPods[k], func(a, b *corev1.Pod) int {
			return cmp.Or(natural.Compare(a.Name, b.Name), strings.Compare(a.Namespace, b.Namespace))
		})
		r := &out[k]
		r.Members = make([]Member, len(gangPods[k]))
		for j, pod := range gangPods[k] {
			r.Members[j] = Member{Name: pod.Name, Column: pod.Labels[opts.Labels.Column],
				Revision: pod.Labels[opts.Labels.Revision], State: podState(pod, opts)}
		}
	}
	order := make([]int, len(out))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return natural.Compare(out[a].Name, out[b].Name) })
	for _, k := range order {
		if err := rd.gang(&out[k], gangPods[k]); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b Replica) int { return natural.Compare(a.Name, b.Name) })
	for i := range out {
		r := &out[i]
		r.Revision = majorityRevision(r.Members)
		if len(opts.Columns) > 0 {
			r.Members = rd.inColumns(r, opts.MissingSince[r.Name])
		}
	}
	return out, nil
}

// podReader is FromPods' options, checked, with what it looks up per pod.
type podReader struct {
	opts PodOptions
	// column is the position of each of opts.Columns.
	column map[string]int
}

// newPodReader checks opts, and that the gangs of pods (those with a gang
// label) times the columns are within MaxReplicas, before it allocates
// anything for the columns.
func newPodReader(opts PodOptions, pods []*corev1.Pod) (*podReader, error) {
	switch {
	case opts.Labels.Revision == "":
		return nil, fmt.Errorf("options: labels.revision: must not be empty")
	case opts.MinReadySeconds < 0:
		return nil, fmt.Errorf("options: minReadySeconds: %d is negative", opts.MinReadySeconds)
	case opts.MinReadySeconds > 0 && opts.Now.IsZero():
		return nil, fmt.Errorf("options: now: must be set when minReadySeconds is %d", opts.MinReadySeconds)
	case len(opts.Columns) > MaxReplicas:
		return nil, fmt.Errorf("options: columns: %d, more than MaxReplicas %d", len(opts.Columns), MaxReplicas)
	case len(opts.Columns) > 0 && opts.Labels.Gang == "":
		return nil, fmt.Errorf("options: columns: set, but labels.gang is empty (columns are a gang's members)")
	case len(opts.Columns) > 0 && opts.Labels.Column == "":
		return nil, fmt.Errorf("options: columns: set, but labels.column is empty (the label naming a member's column)")
	}
	if len(opts.Columns) > 0 {
		gangs := map[string]bool{}
		for _, pod := range pods {
			if pod == nil {
				continue // podsError counts it
			}
			if g := pod.Labels[opts.Labels.Gang]; g != "" {
				gangs[g] = true
			}
		}
		if n := len(gangs) * len(opts.Columns); n > MaxReplicas {
			return nil, fmt.Errorf("options: columns: %d gangs of %d members are %d members, more than MaxReplicas %d",
				len(gangs), len(opts.Columns), n, MaxReplicas)
		}
	}
	rd := &podReader{opts: opts, column: make(map[string]int, len(opts.Columns))}
	for i, c := range opts.Columns {
		if _, dup := rd.column[c]; c == "" || dup {
			return nil, fmt.Errorf("options: columns[%d]: %q is empty or repeated", i, c)
		}
		rd.column[c] = i
	}
	return rd, nil
}

// index is pod's index label; podError checked it.
func (rd *podReader) index(pod *corev1.Pod) int {
	if rd.opts.Labels.Index == "" {
		return 0
	}
	i, _ := strconv.ParseInt(pod.Labels[rd.opts.Labels.Index], 10, 32)
	return int(i)
}

// recovery is pod's recovery annotations; podError checked them.
func (rd *podReader) recovery(pod *corev1.Pod) (replacementFor string, swappedAt time.Time) {
	a := rd.opts.Annotations
	if a.ReplacementFor != "" {
		replacementFor = pod.Annotations[a.ReplacementFor]
	}
	if v := pod.Annotations[a.SwappedAt]; a.SwappedAt != "" && v != "" {
		swappedAt, _ = time.Parse(time.RFC3339, v)
	}
	return replacementFor, swappedAt
}

// gang sets a gang's Index and ReplacementFor from its members' pods (pods[j]
// is member j's), and checks that they agree and that no two pods that are
// not terminating share a column.
func (rd *podReader) gang(r *Replica, pods []*corev1.Pod) error {
	l, a := rd.opts.Labels, rd.opts.Annotations
	var indexFrom, replacingFrom *corev1.Pod
	inColumn := map[string]*corev1.Pod{}
	for j := range r.Members {
		m := &r.Members[j]
		pod := pods[j]
		if l.Index != "" {
			i := rd.index(pod)
			if indexFrom == nil {
				indexFrom, r.Index = pod, i
			} else if i != r.Index {
				return fmt.Errorf("gang %s: pods %s and %s: label %s: %d and %d differ",
					r.Name, podID(indexFrom), podID(pod), l.Index, r.Index, i)
			}
		}
		if v, _ := rd.recovery(pod); v != "" {
			if replacingFrom == nil {
				replacingFrom, r.ReplacementFor = pod, v
			} else if v != r.ReplacementFor {
				return fmt.Errorf("gang %s: pods %s and %s: annotation %s: %q and %q differ",
					r.Name, podID(replacingFrom), podID(pod), a.ReplacementFor, r.ReplacementFor, v)
			}
		}
		if len(rd.opts.Columns) > 0 && !m.State.Terminating {
			if other, dup := inColumn[m.Column]; dup {
				return fmt.Errorf("gang %s: pods %s and %s: label %s: both in column %q",
					r.Name, podID(other), podID(pod), l.Column, m.Column)
			}
			inColumn[m.Column] = pod
		}
	}
	return nil
}

// inColumns returns a gang's members in the order of the columns, a missing
// member (unready since missingSince) in each column without a pod. A column
// with a terminating pod and a live one lists both, the terminating one last.
func (rd *podReader) inColumns(r *Replica, missingSince time.Time) []Member {
	by := make([][]Member, len(rd.opts.Columns))
	for _, m := range r.Members {
		c := rd.column[m.Column]
		by[c] = append(by[c], m)
	}
	out := make([]Member, 0, len(rd.opts.Columns))
	for c, ms := range by {
		if len(ms) == 0 {
			out = append(out, Member{Column: rd.opts.Columns[c], Missing: true, State: State{UnreadySince: missingSince}})
			continue
		}
		slices.SortStableFunc(ms, func(a, b Member) int {
			switch {
			case a.State.Terminating == b.State.Terminating:
				return 0
			case b.State.Terminating:
				return -1
			}
			return 1
		})
		out = append(out, ms...)
	}
	return out
}

func podID(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// majorityRevision is the revision most members that are not terminating run
// (of all members when every one is), the newest on ties.
func majorityRevision(ms []Member) string {
	count := map[string]int{}
	best := ""
	for _, m := range ms {
		if !m.State.Terminating {
			count[m.Revision]++
		}
	}
	if len(count) == 0 {
		for _, m := range ms {
			count[m.Revision]++
		}
	}
	for rev, c := range count {
		if best == "" || c > count[best] || (c == count[best] && CompareRevisions(rev, best, nil) > 0) {
			best = rev
		}
	}
	return best
}

func unhealthyWaiting(reason string) bool {
	switch reason {
	case "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError":
		return true
	}
	return false
}

func podState(pod *corev1.Pod, opts PodOptions) State {
	s := State{Healthy: true, Terminating: pod.DeletionTimestamp != nil}
	s.UnreadySince = pod.CreationTimestamp.Time
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			s.Ready = true
			s.ReadySince = c.LastTransitionTime.Time
			s.UnreadySince = time.Time{}
		} else if !c.LastTransitionTime.IsZero() {
			s.UnreadySince = c.LastTransitionTime.Time
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Waiting != nil && unhealthyWaiting(cs.State.Waiting.Reason) {
			s.Healthy = false
		}
	}
	switch pod.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		s.Failed = true
	}
	s.Lost = pod.Status.Reason == "NodeLost"
	if s.Ready && !s.Healthy {
		s.UnreadySince = s.ReadySince
	}
	s.Available = s.Ready && (opts.MinReadySeconds == 0 ||
		(!s.ReadySince.IsZero() && opts.Now.Sub(s.ReadySince) >= time.Duration(opts.MinReadySeconds)*time.Second))
	return s
}
