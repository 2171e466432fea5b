package testenv

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKubeletDelayJitter(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	k := func(seed uint64, jitter float64) *Kubelet {
		return &Kubelet{opts: KubeletOptions{Seed: seed, Jitter: jitter}}
	}
	const d = time.Second
	t.Run("without jitter a delay is as given", func(t *testing.T) {
		if got := k(1, 0).delay(pod, "start", d); got != d {
			t.Errorf("delay %v, want %v", got, d)
		}
	})
	t.Run("a zero delay stays zero", func(t *testing.T) {
		if got := k(1, 0.5).delay(pod, "start", 0); got != 0 {
			t.Errorf("delay %v, want 0", got)
		}
	})
	t.Run("jitter scales by a factor in [1, 1+jitter), the same for a seed and event", func(t *testing.T) {
		distinct := map[time.Duration]bool{}
		for seed := range uint64(20) {
			for _, event := range []string{"bind", "start", "terminate"} {
				got := k(seed, 0.5).delay(pod, event, d)
				if got < d || got >= d*3/2 {
					t.Errorf("seed %d, %s: delay %v outside [%v, %v)", seed, event, got, d, d*3/2)
				}
				if again := k(seed, 0.5).delay(pod, event, d); again != got {
					t.Errorf("seed %d, %s: delay %v then %v", seed, event, got, again)
				}
				distinct[got] = true
			}
		}
		if len(distinct) < 50 {
			t.Errorf("%d distinct delays of 60 draws", len(distinct))
		}
	})
}

func TestSetConditions(t *testing.T) {
	const gate = corev1.PodConditionType("example.com/gate")
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := then.Add(time.Hour)
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:     []corev1.Container{{Name: "app"}},
		ReadinessGates: []corev1.PodReadinessGate{{ConditionType: gate}},
	}}
	running := corev1.PodStatus{Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}},
		Conditions: []corev1.PodCondition{
			{Type: gate, Status: corev1.ConditionTrue, LastTransitionTime: then, Reason: "Owner"},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: then},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: then},
		}}
	s := running.DeepCopy()
	setConditions(s, pod, now)
	get := func(t corev1.PodConditionType) corev1.PodCondition {
		for _, c := range s.Conditions {
			if c.Type == t {
				return c
			}
		}
		return corev1.PodCondition{}
	}
	if c := get(gate); c.Status != corev1.ConditionTrue || c.Reason != "Owner" || !c.LastTransitionTime.Equal(&then) {
		t.Errorf("the gate's condition changed: %+v", c)
	}
	if c := get(corev1.PodReady); c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Time.Equal(now) {
		t.Errorf("Ready %+v: want True since now (a transition)", c)
	}
	if c := get(corev1.ContainersReady); c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Equal(&then) {
		t.Errorf("ContainersReady %+v: want True since before (no transition)", c)
	}
	if c := get(corev1.PodInitialized); c.Status != corev1.ConditionTrue {
		t.Errorf("Initialized %+v: want True (no init containers)", c)
	}
	s.Conditions[0].Status = corev1.ConditionFalse
	setConditions(s, pod, now.Add(time.Minute))
	if c := get(corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "ReadinessGatesNotReady" {
		t.Errorf("Ready %+v with the gate False: want False, ReadinessGatesNotReady", c)
	}
}
