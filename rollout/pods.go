package rollout

import (
	"fmt"
	"slices"
	"strconv"
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
	// Column holds a single pod's column (group mode); empty means none.
	Column string
	// DataRevision holds the revision of the data a pod serves (index, model,
	// LoRA adapter), read into [Replica].DataRevision; empty means none is read.
	DataRevision string
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
)

// PodOptions configures [FromPods].
type PodOptions struct {
	// Labels names the labels to read; the zero value means [DefaultLabels].
	Labels PodLabels
	// MinReadySeconds is how long a pod must be ready to be available; it must not
	// be negative. When it is above 0, Now must be set.
	MinReadySeconds int32
	// Now is the time availability is judged at.
	Now time.Time
	// GangSize is how many members a gang should have; missing members are added
	// with Missing set, named <gang>-missing-<i> ([Repair] lists them by these
	// names). 0 means gangs have as many members as they have pods. It
	// must not be negative, and the gangs found times GangSize must not exceed
	// [MaxReplicas] (every missing pod becomes a member).
	GangSize int
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
// all its pods carry, empty when they differ).
//
// A gang's revision is the one most of its members that are not terminating
// run (of all its members when every one is terminating; the newest by
// [CompareRevisions] on ties): a gang being recreated at a new revision, whose
// old pods are still going away, runs the new one. Its members are in natural
// name order; with opts.GangSize, members it lacks follow as placeholders named
// <gang>-missing-<i> (i counting on from the pods present) with Missing set,
// and these are the names a [Repair] or an [Update] lists for them: create the
// pods the gang lacks, whatever their real names. Replicas are returned in
// natural name order. pods are not modified.
func FromPods(pods []*corev1.Pod, opts PodOptions) ([]Replica, error) {
	if opts.Labels == (PodLabels{}) {
		opts.Labels = DefaultLabels
	}
	if opts.Labels.Revision == "" {
		return nil, fmt.Errorf("options: labels.revision: must not be empty")
	}
	if opts.MinReadySeconds < 0 {
		return nil, fmt.Errorf("options: minReadySeconds: %d is negative", opts.MinReadySeconds)
	}
	if opts.GangSize < 0 {
		return nil, fmt.Errorf("options: gangSize: %d is negative", opts.GangSize)
	}
	if opts.GangSize > MaxReplicas {
		return nil, fmt.Errorf("options: gangSize: %d, more than MaxReplicas %d", opts.GangSize, MaxReplicas)
	}
	if len(pods) > MaxReplicas {
		return nil, fmt.Errorf("pods: %d, more than MaxReplicas %d", len(pods), MaxReplicas)
	}
	if opts.MinReadySeconds > 0 && opts.Now.IsZero() {
		return nil, fmt.Errorf("options: now: must be set when minReadySeconds is %d", opts.MinReadySeconds)
	}
	var out []Replica
	gangs := map[string]int{}
	for _, pod := range pods {
		if pod == nil || podError(pod, opts) != nil {
			return nil, podsError(pods, opts) // order-independent (invalid.go)
		}
		rev := pod.Labels[opts.Labels.Revision]
		st := podState(pod, opts)
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
		if opts.Labels.Gang == "" {
			out = append(out, Replica{Name: pod.Name, Revision: rev, DataRevision: data, State: st, Priority: prio,
				DeletionCost: cost, Column: pod.Labels[opts.Labels.Column]})
			continue
		}
		g := pod.Labels[opts.Labels.Gang]
		k, ok := gangs[g]
		if !ok {
			k = len(out)
			gangs[g] = k
			out = append(out, Replica{Name: g, DataRevision: data, Priority: prio, DeletionCost: cost})
		}
		r := &out[k]
		if r.DataRevision != data {
			// Members serving different data: the gang serves no one data
			// revision, so a data release moves it.
			r.DataRevision = ""
		}
		r.Priority = max(r.Priority, prio)
		r.DeletionCost = max(r.DeletionCost, cost)
		r.Members = append(r.Members, Member{Name: pod.Name, Revision: rev, State: st})
	}
	if opts.Labels.Gang != "" && opts.GangSize > 0 && len(out)*opts.GangSize > MaxReplicas {
		// Checked before any missing member is allocated.
		return nil, fmt.Errorf("options: gangSize: %d gangs of %d members are %d members, more than MaxReplicas %d",
			len(out), opts.GangSize, len(out)*opts.GangSize, MaxReplicas)
	}
	// In name order, so that the first gang over gangSize is the same for any order
	// of pods.
	slices.SortFunc(out, func(a, b Replica) int { return natural.Compare(a.Name, b.Name) })
	for i := range out {
		r := &out[i]
		if len(r.Members) == 0 {
			continue
		}
		slices.SortFunc(r.Members, func(a, b Member) int { return natural.Compare(a.Name, b.Name) })
		if opts.GangSize > 0 && len(r.Members) > opts.GangSize {
			return nil, fmt.Errorf("gang %s: %d members, more than gangSize %d", r.Name, len(r.Members), opts.GangSize)
		}
		r.Revision = majorityRevision(r.Members)
		for j := len(r.Members); j < opts.GangSize; j++ {
			r.Members = append(r.Members, Member{Name: fmt.Sprintf("%s-missing-%d", r.Name, j), Missing: true,
				State: State{UnreadySince: opts.MissingSince[r.Name]}})
		}
	}
	return out, nil
}

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
