package rollout

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan/internal/natural"
)

// Errors about invalid input must not depend on the order of the input, like every
// other output: the planners check replicas in input order on their fast path and,
// once one is invalid, call the functions below, which look at all of them and report
// the problem of the replica that sorts first by name (natural order), then by
// message. Replicas without a name cannot be named: they are counted.

// firstProblem keeps the problem that sorts first by (name, message).
type firstProblem struct {
	name, msg string
	found     bool
}

func (f *firstProblem) add(name, msg string) {
	if !f.found {
		*f = firstProblem{name, msg, true}
		return
	}
	if c := natural.Compare(name, f.name); c < 0 || c == 0 && (name < f.name || name == f.name && msg < f.msg) {
		*f = firstProblem{name, msg, true}
	}
}

func (f *firstProblem) err() error {
	if !f.found {
		return nil
	}
	return fmt.Errorf("%s", f.msg)
}

// replicasError returns the order-independent error for replicas, or nil when they
// are valid: names present, unique and at most MaxNameLength bytes, and, with check,
// each replica passing check.
func replicasError(replicas []Replica, check func(*Replica) error) error {
	var first firstProblem
	empty := 0
	seen := make(map[string]struct{}, len(replicas))
	for i := range replicas {
		r := &replicas[i]
		switch {
		case r.Name == "":
			empty++
			continue
		case len(r.Name) > MaxNameLength:
			first.add(r.Name, fmt.Sprintf("replica %.64s…: name: %d bytes, longer than MaxNameLength %d", r.Name, len(r.Name), MaxNameLength))
			continue
		}
		if _, dup := seen[r.Name]; dup {
			first.add(r.Name, fmt.Sprintf("replica %s: name: repeated", r.Name))
		}
		seen[r.Name] = struct{}{}
		if check == nil {
			continue
		}
		if err := check(r); err != nil {
			first.add(r.Name, err.Error())
		}
	}
	if empty > 0 {
		return fmt.Errorf("replicas: %d without a name: name: must not be empty", empty)
	}
	return first.err()
}

// planCheck is what Plan requires of each named replica in mode.
func planCheck(mode Mode) func(*Replica) error {
	return func(r *Replica) error {
		switch {
		case r.Revision == "":
			return fmt.Errorf("replica %s: revision: must not be empty", r.Name)
		case r.Index < 0:
			return fmt.Errorf("replica %s: index: %d is negative", r.Name, r.Index)
		case mode == Gang && len(r.Members) == 0:
			return fmt.Errorf("replica %s: members: gang mode needs at least one member", r.Name)
		case mode == Group && r.Column == "":
			return fmt.Errorf("replica %s: column: group mode needs a column", r.Name)
		}
		if _, _, _, bad := inspect(r); bad >= 0 {
			return memberError(r, bad)
		}
		return nil
	}
}

// memberError says what is wrong with member j of r, which inspect found
// invalid.
func memberError(r *Replica, j int) error {
	m := &r.Members[j]
	switch {
	case !m.Missing:
		return fmt.Errorf("replica %s: members[%d].name: must not be empty", r.Name, j)
	case m.Column == "":
		return fmt.Errorf("replica %s: members[%d].column: must not be empty for a missing member (its pod is created in it)", r.Name, j)
	}
	return fmt.Errorf("replica %s: members[%d].column: %q is repeated in the gang", r.Name, j, m.Column)
}

// podError is FromPods' check of one pod.
func (rd *podReader) podError(pod *corev1.Pod) error {
	id := podID(pod)
	l, a := rd.opts.Labels, rd.opts.Annotations
	if pod.Labels[l.Revision] == "" {
		return fmt.Errorf("pod %s: label %s: missing or empty", id, l.Revision)
	}
	if v, ok := pod.Annotations[DeletionCostAnnotation]; ok {
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			return fmt.Errorf("pod %s: annotation %s: %q is not a 32-bit integer", id, DeletionCostAnnotation, v)
		}
	}
	if l.Gang != "" && pod.Labels[l.Gang] == "" {
		return fmt.Errorf("pod %s: label %s: missing or empty", id, l.Gang)
	}
	if l.Index != "" {
		v, ok := pod.Labels[l.Index]
		if i, err := strconv.ParseInt(v, 10, 32); !ok || err != nil || i < 0 {
			return fmt.Errorf("pod %s: label %s: %q is not a non-negative 32-bit integer", id, l.Index, v)
		}
	}
	if len(rd.opts.Columns) > 0 {
		if _, ok := rd.column[pod.Labels[l.Column]]; !ok {
			return fmt.Errorf("pod %s: label %s: %q is not one of the columns %v", id, l.Column, pod.Labels[l.Column], rd.opts.Columns)
		}
	}
	if v := pod.Annotations[a.SwappedAt]; a.SwappedAt != "" && v != "" {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			return fmt.Errorf("pod %s: annotation %s: %q is not an RFC 3339 time", id, a.SwappedAt, v)
		}
	}
	return nil
}

// podsError returns FromPods' order-independent error: nil pods are counted, else
// the problem of the pod that sorts first by namespace/name, then by message.
func (rd *podReader) podsError(pods []*corev1.Pod) error {
	var first firstProblem
	nils := 0
	for _, pod := range pods {
		if pod == nil {
			nils++
			continue
		}
		if err := rd.podError(pod); err != nil {
			first.add(podID(pod), err.Error())
		}
	}
	if nils > 0 {
		return fmt.Errorf("pods: %d are nil", nils)
	}
	return first.err()
}
