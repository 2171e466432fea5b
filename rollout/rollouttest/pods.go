package rollouttest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/rollout"
)

// PodImage is the image of the one container in the pods [Scenario.Pods]
// returns; replace the spec with your own before creating them.
const PodImage = "kplan.invalid/replica"

// Pods returns the scenario's replicas as pods that [rollout.FromPods], called
// with the same opts, reads back as the same replicas, so that a test can seed a
// cluster with a scenario. A single replica is one pod named after it; a gang is
// one pod per member that is not missing, named after the member and labelled
// with the gang's name (pass the gangs' columns as opts.Columns so that
// FromPods adds the missing members back). Labels come from opts.Labels (the
// zero value means [rollout.DefaultLabels]): the revision (a member's own,
// else its gang's), the column (a member's own in a gang), the index and the
// data revision. Recovery state is in the annotations opts.Annotations names
// (the zero value means [rollout.DefaultAnnotations]) on every pod of the
// replica: ReplacementFor, and SwappedAt in UTC (FromPods reads it back in
// UTC).
//
// States map as FromPods reads them: Ready is a PodReady condition that turned
// true at ReadySince, or when that is zero at opts.Now minus MinReadySeconds for
// an available replica and at opts.Now for one that is not yet; a replica that is
// not ready has the condition false since UnreadySince; not Healthy is a
// container waiting in CrashLoopBackOff; Failed is phase Failed; Lost is status
// reason NodeLost; Terminating is a deletion timestamp at opts.Now. Priority is
// spec.priority, DeletionCost the pod-deletion-cost annotation.
//
// What pods cannot carry is an error naming the replica and field: a gang's
// own State or Column (set its members' states and columns), a label or
// annotation opts does not name, a single replica while opts.Labels.Gang is
// set, an available replica that is not ready, or one whose availability
// disagrees with ReadySince, MinReadySeconds and Now. A gang whose members are
// all missing has no pod, so FromPods does not see it. A gang's revision comes
// back as the one most members run.
//
// The pods have no namespace, owner or other labels, one container running
// [PodImage], and their status set: on an API server, create them and then
// write the status through the status subresource (a deletion timestamp only a
// delete can set). The scenario is not modified.
func (sc Scenario) Pods(opts rollout.PodOptions) ([]*corev1.Pod, error) {
	if opts.Labels == (rollout.PodLabels{}) {
		opts.Labels = rollout.DefaultLabels
	}
	if opts.Annotations == (rollout.PodAnnotations{}) {
		opts.Annotations = rollout.DefaultAnnotations
	}
	switch {
	case opts.Labels.Revision == "":
		return nil, fmt.Errorf("options: labels.revision: must not be empty")
	case opts.MinReadySeconds < 0:
		return nil, fmt.Errorf("options: minReadySeconds: %d is negative", opts.MinReadySeconds)
	case opts.MinReadySeconds > 0 && opts.Now.IsZero():
		return nil, fmt.Errorf("options: now: must be set when minReadySeconds is %d", opts.MinReadySeconds)
	case len(sc.Replicas) > rollout.MaxReplicas:
		return nil, fmt.Errorf("replicas: %d, more than MaxReplicas %d", len(sc.Replicas), rollout.MaxReplicas)
	}
	total := 0
	for i := range sc.Replicas {
		total += max(len(sc.Replicas[i].Members), 1)
		if total > rollout.MaxReplicas {
			return nil, fmt.Errorf("replicas: more than MaxReplicas %d pods", rollout.MaxReplicas)
		}
	}
	pods := make([]*corev1.Pod, 0, total)
	names := make(map[string]bool, total)
	for i := range sc.Replicas {
		r := &sc.Replicas[i]
		if err := podable(r, opts); err != nil {
			return nil, fmt.Errorf("replica %s: %w", r.Name, err)
		}
		add := func(name, revision, column string, st rollout.State) error {
			if name == "" {
				return fmt.Errorf("a pod needs a name")
			}
			if names[name] {
				return fmt.Errorf("pod name %s is used twice", name)
			}
			names[name] = true
			pod, err := replicaPod(r, name, revision, column, st, opts)
			if err != nil {
				return fmt.Errorf("pod %s: %w", name, err)
			}
			pods = append(pods, pod)
			return nil
		}
		if len(r.Members) == 0 {
			if err := add(r.Name, r.Revision, r.Column, r.State); err != nil {
				return nil, fmt.Errorf("replica %s: %w", r.Name, err)
			}
			continue
		}
		for j := range r.Members {
			m := &r.Members[j]
			if m.Missing {
				continue
			}
			rev := m.Revision
			if rev == "" {
				rev = r.Revision
			}
			if err := add(m.Name, rev, m.Column, m.State); err != nil {
				return nil, fmt.Errorf("replica %s: member %d: %w", r.Name, j, err)
			}
		}
	}
	return pods, nil
}

// podable reports what of r pods cannot carry under opts.
func podable(r *rollout.Replica, opts rollout.PodOptions) error {
	l, a := opts.Labels, opts.Annotations
	memberColumns := slices.ContainsFunc(r.Members, func(m rollout.Member) bool { return m.Column != "" })
	switch {
	case r.ReplacementFor != "" && a.ReplacementFor == "":
		return fmt.Errorf("replacementFor: %q, but options name no replacement-for annotation", r.ReplacementFor)
	case !r.SwappedAt.IsZero() && a.SwappedAt == "":
		return fmt.Errorf("swappedAt: set, but options name no swapped-at annotation")
	case r.Index < 0 || r.Index > math.MaxInt32:
		return fmt.Errorf("index: %d does not fit the index label (a non-negative int32)", r.Index)
	case r.Index != 0 && l.Index == "":
		return fmt.Errorf("index: %d, but options name no index label", r.Index)
	case memberColumns && l.Column == "":
		return fmt.Errorf("members: some have a column, but options name no column label")
	case r.DeletionCost < math.MinInt32 || r.DeletionCost > math.MaxInt32:
		return fmt.Errorf("deletionCost: %d does not fit the pod-deletion-cost annotation (an int32)", r.DeletionCost)
	case r.DataRevision != "" && l.DataRevision == "":
		return fmt.Errorf("dataRevision: %q, but options name no data revision label", r.DataRevision)
	case len(r.Members) > 0 && l.Gang == "":
		return fmt.Errorf("members: a gang, but options name no gang label")
	case len(r.Members) == 0 && l.Gang != "":
		return fmt.Errorf("members: none, but options name a gang label (every pod would be a gang)")
	case len(r.Members) > 0 && r.State != (rollout.State{}):
		return fmt.Errorf("state: a gang's own state is not read from its pods; set its members' states")
	case len(r.Members) > 0 && r.Column != "":
		return fmt.Errorf("column: %q, but a gang's column is not read from its pods", r.Column)
	case r.Column != "" && l.Column == "":
		return fmt.Errorf("column: %q, but options name no column label", r.Column)
	}
	return nil
}

// replicaPod is one pod of r, named name, running revision, in column, in
// state st.
func replicaPod(r *rollout.Replica, name, revision, column string, st rollout.State, opts rollout.PodOptions) (*corev1.Pod, error) {
	l, a := opts.Labels, opts.Annotations
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{l.Revision: revision}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "replica", Image: PodImage}}},
	}
	if l.Gang != "" {
		pod.Labels[l.Gang] = r.Name
	}
	if column != "" {
		pod.Labels[l.Column] = column
	}
	if l.Index != "" {
		pod.Labels[l.Index] = strconv.Itoa(r.Index)
	}
	if r.DataRevision != "" {
		pod.Labels[l.DataRevision] = r.DataRevision
	}
	if r.Priority != 0 {
		p := r.Priority
		pod.Spec.Priority = &p
	}
	annotate := func(k, v string) {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[k] = v
	}
	if r.DeletionCost != 0 {
		annotate(rollout.DeletionCostAnnotation, strconv.FormatInt(r.DeletionCost, 10))
	}
	if r.ReplacementFor != "" {
		annotate(a.ReplacementFor, r.ReplacementFor)
	}
	if !r.SwappedAt.IsZero() {
		annotate(a.SwappedAt, r.SwappedAt.UTC().Format(time.RFC3339Nano))
	}
	if st.Available && !st.Ready {
		return nil, fmt.Errorf("state: available but not ready")
	}
	minReady := time.Duration(opts.MinReadySeconds) * time.Second
	cond := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse,
		LastTransitionTime: metav1.NewTime(st.UnreadySince)}
	pod.Status.Phase = corev1.PodPending
	if st.Ready {
		since := st.ReadySince
		if since.IsZero() {
			since = opts.Now
			if st.Available {
				since = since.Add(-minReady)
			}
		}
		if avail := opts.MinReadySeconds == 0 || (!since.IsZero() && opts.Now.Sub(since) >= minReady); avail != st.Available {
			return nil, fmt.Errorf("state: available is %t, but ready since %s is %t at now %s with minReadySeconds %d",
				st.Available, since.Format(time.RFC3339), avail, opts.Now.Format(time.RFC3339), opts.MinReadySeconds)
		}
		cond.Status, cond.LastTransitionTime = corev1.ConditionTrue, metav1.NewTime(since)
		pod.Status.Phase = corev1.PodRunning
	}
	pod.Status.Conditions = []corev1.PodCondition{cond}
	if !st.Healthy {
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "replica", Image: PodImage,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	}
	if st.Failed {
		pod.Status.Phase = corev1.PodFailed
	}
	if st.Lost {
		pod.Status.Reason = "NodeLost"
	}
	if st.Terminating {
		t := metav1.NewTime(opts.Now)
		pod.DeletionTimestamp = &t
	}
	return pod, nil
}
