package modelserving

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/inplace"
)

// Where pods sit and how they are named and built.

// podSlot is where a pod sits: its role, serving group and member index.
type podSlot struct {
	role          string
	group, member int
}

// slotOf reads a pod's slot from its labels.
func slotOf(p *corev1.Pod) (podSlot, bool) {
	g, err1 := strconv.Atoi(p.Labels[servingv1.LabelGroupIndex])
	m, err2 := strconv.Atoi(p.Labels[servingv1.LabelMemberIndex])
	r := p.Labels[servingv1.LabelRole]
	if err1 != nil || err2 != nil || r == "" || g < 0 || m < 0 {
		return podSlot{}, false
	}
	return podSlot{role: r, group: g, member: m}, true
}

// msPodName is the name of member m of role in serving group g.
func msPodName(ms, role string, g, m int) string {
	return fmt.Sprintf("%s-%s-%d-%d", ms, role, g, m)
}

// newPod builds the pod of slot s from tmpl.
func newPod(ms *servingv1.ModelServing, tmpl corev1.PodTemplateSpec, s podSlot, rev string) *corev1.Pod {
	labels := maps.Clone(tmpl.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[servingv1.LabelName] = ms.Name
	labels[servingv1.LabelGroupName] = ms.GroupName(s.group)
	labels[servingv1.LabelRole] = s.role
	labels[servingv1.LabelRevision] = rev
	labels[servingv1.LabelGroupIndex] = strconv.Itoa(s.group)
	labels[servingv1.LabelMemberIndex] = strconv.Itoa(s.member)
	labels[servingv1.LabelColumn] = servingv1.ColumnName(s.role, s.member)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   ms.Namespace,
			Name:        msPodName(ms.Name, s.role, s.group, s.member),
			Labels:      labels,
			Annotations: maps.Clone(tmpl.Annotations),
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	inplace.AddGate(&pod.Spec)
	return pod
}
