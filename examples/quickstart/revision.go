package main

import (
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/revision"
)

// This file holds the revision section: a ConfigMapSet partition plan and its rollback.

func configMapSet(w io.Writer) error {
	// The set exists before its pods: the webhook injects every pod created after it
	// (Plan leaves pods without the reload sidecar, or older than the set, alone).
	created := now.Add(-2 * time.Minute)
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "demo", Name: "engine-config", Generation: 1, CreationTimestamp: metav1.NewTime(created),
		},
		Spec: revision.ConfigMapSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "engine"}},
			Data:       map[string]string{"settings.yaml": "max_batch: 8\n"},
			Containers: []revision.ContainerInjectSpec{{Name: "engine", MountPath: "/etc/engine"}},
		},
	}
	keys, err := revision.KeysFor(set.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ConfigMapSet demo/%s over 4 pods; pod annotations:\n  %s\n  %s\n\n", set.Name, keys.UpdateRevision, keys.CurrentRevision)

	// The pods, as the mutating webhook creates them: revision.Inject adds the files'
	// volume, the reload sidecar and the mounts, and picks each pod's first revision.
	fmt.Fprintln(w, "webhook: each new pod is injected (files volume, reload sidecar, mounts)")
	var pods []*corev1.Pod
	for _, name := range []string{"engine-a", "engine-b", "engine-c", "engine-d"} {
		born := created.Add(time.Minute)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "demo", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "engine"},
				CreationTimestamp: metav1.NewTime(born),
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "engine:1.0"}}},
		}
		res, err := revision.Inject(pod, revision.InjectInput{
			Set: set, Pods: pods, KubeVersion: "v1.31.0",
			Sidecar: revision.SidecarOptions{Image: "configmapset-reload:1"}, Now: born,
		})
		if err != nil {
			return err
		}
		if !res.Changed {
			return fmt.Errorf("pod %s: not injected", name)
		}
		fmt.Fprintf(w, "  %s: created with sidecar %s, wants revision %s\n", name, revision.ReloadSidecarName(set.Name), res.Revision)
		pods = append(pods, pod)
	}
	fmt.Fprintln(w)

	var hub *corev1.ConfigMap
	plan := func(title string, at time.Time) error {
		res, err := revision.Plan(revision.Input{Set: set, Hub: hub, Pods: pods, Now: at})
		if err != nil {
			return err
		}
		fmt.Fprintln(w, title)
		hub = res.Hub.ConfigMap // the reconciler writes it as res.Hub.Action says
		if res.Hub.Action != kplan.ActionNone {
			fmt.Fprintf(w, "  write hub ConfigMap %s: revisions %v (oldest first)\n", hub.Name, res.Revisions)
		}
		for _, p := range res.Pods {
			if v := p.Annotations[keys.UpdateRevision]; v != nil {
				fmt.Fprintf(w, "  patch %s: want revision %s\n", p.Name, *v)
			}
		}
		for _, e := range res.Events {
			fmt.Fprintf(w, "  event %s: %s\n", e.Reason, e.Message)
		}
		st := res.Status
		fmt.Fprintf(w, "  status: current %s, update %s, %d/%d pods updated\n", orNone(st.CurrentRevision), st.UpdateRevision, st.UpdatedPods, st.MatchedPods)
		// Apply the patches, and play the node side: each pod confirms its revision.
		for i, p := range pods {
			for _, pp := range res.Pods {
				if pp.Name == p.Name {
					p = pp.Apply(p)
				}
			}
			p = p.DeepCopy()
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			if want := p.Annotations[keys.UpdateRevision]; want != "" {
				p.Annotations[keys.CurrentRevision] = want
				p.Annotations[keys.CurrentRevisionTimestamp] = revision.FormatTimestamp(at)
			}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			pods[i] = p
		}
		set.Status = res.Status
		return nil
	}
	if err := plan("reconcile 1: the hub gets the first revision (the pods already want it)", now); err != nil {
		return err
	}
	if err := plan("reconcile 2: every pod confirmed it", now.Add(time.Minute)); err != nil {
		return err
	}
	half := intstr.FromString("50%")
	set.Generation++
	set.Spec.Data = map[string]string{"settings.yaml": "max_batch: 16\n"}
	set.Spec.UpdateStrategy.Partition = &half
	if err := plan("reconcile 3: new data, partition 50% (half the pods kept on the old revision)", now.Add(2*time.Minute)); err != nil {
		return err
	}
	all := intstr.FromString("100%")
	set.Generation++
	set.Spec.UpdateStrategy.Partition = &all
	return plan("reconcile 4: partition 100%: roll back", now.Add(3*time.Minute))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
