package cli

import (
	"encoding/json"
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/manifest"
	"github.com/kplan-dev/kplan/revision"
)

var revisionCommand = &command{
	name:    "revision",
	summary: "a ConfigMapSet reconcile: the hub, pod annotations and status (revision.Plan)",
	usage: `The input holds the ConfigMapSet (any API group), its pods, and optionally its
hub ConfigMap ({name}-hub). Pods in the set's namespace that its selector
matches are planned; others are ignored. Prints what to do with the hub
ConfigMap (Create, Update or None) and the ConfigMap when it changes, the
revisions it holds, a merge patch per pod, the new status, the events, whether
the rollout is complete as far as the partition allows, and why each pod that
is not current waits.

Cold pods are listed with the reason and never patched: pods without the set's
reload sidecar (created before the set or its webhook, or while injection was
paused) and pods created before spec.containers last changed
(status.lastContainersTimestamp) lack the set's mounts. Re-create them so the
webhook injects them; until then the rollout cannot complete.

  kubectl get configmapset engine-config -o yaml > set.yaml
  kubectl get configmap engine-config-hub -o yaml > hub.yaml
  kubectl get pods -l app=engine -o yaml | kplan revision -f set.yaml -f hub.yaml -f -
`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.set, "set", "", "the ConfigMapSet, as name or namespace/name, when the input holds several")
		fs.Var(&o.now, "now", "the current time, RFC 3339, written into timestamps (default: the clock)")
	},
	run: runRevision,
}

type revisionPlan struct {
	Set            string   `json:"set"`
	UpdateRevision string   `json:"updateRevision"`
	Revisions      []string `json:"revisions"`
	// HubAction is what to do with the hub: Create, Update or None.
	HubAction string `json:"hubAction"`
	// Hub is the hub ConfigMap to write, when HubAction is not None.
	Hub    *corev1.ConfigMap           `json:"hub,omitempty"`
	Pods   []podPatchOut               `json:"pods"`
	Status revision.ConfigMapSetStatus `json:"status"`
	Events []eventOut                  `json:"events,omitempty"`
	// Complete is true when the rollout has gone as far as the partition allows.
	Complete bool `json:"complete"`
	// Waiting are the pods that are not current, with why (revision.Result.Waiting).
	Waiting []podReasonOut `json:"waiting,omitempty"`
	// Cold are the matched pods the plan leaves alone, with the reason.
	Cold []podReasonOut `json:"coldPods,omitempty"`
	// Notes explain what the cold pods mean for the rollout.
	Notes []string `json:"notes,omitempty"`
}

// podReasonOut is a revision.PodReason: a pod, a reason code and a message.
type podReasonOut struct {
	Pod     string `json:"pod"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func toPodReasonOut(p revision.PodReason) podReasonOut {
	return podReasonOut{Pod: p.Namespace + "/" + p.Name, Reason: string(p.Reason), Message: p.Message}
}

type podPatchOut struct {
	Pod   string          `json:"pod"`
	Patch json.RawMessage `json:"patch"`
}

func runRevision(o *options, objs []manifest.Object) (any, error) {
	setObj, err := pick(o, byKind(objs, "ConfigMapSet"), "ConfigMapSet", "set", o.set)
	if err != nil {
		return nil, err
	}
	set, sel, err := decodeSet(setObj)
	if err != nil {
		return nil, err
	}
	pods, podObjs, err := matchedPods(set, sel, objs)
	if err != nil {
		return nil, err
	}
	var hub *corev1.ConfigMap
	if hub, _, err = findConfigMap(objs, set.Namespace, revision.HubName(set.Name)); err != nil {
		return nil, err
	}
	res, err := revision.Plan(revision.Input{Set: set, Hub: hub, Pods: pods, Now: o.now.Time()})
	if err != nil {
		return nil, blame(err, setObj, podObjs)
	}
	out := revisionPlan{
		Set: setObj.ID(), UpdateRevision: res.Status.UpdateRevision, Revisions: res.Revisions,
		HubAction: string(res.Hub.Action), Pods: []podPatchOut{}, Status: res.Status, Complete: res.Complete,
	}
	if res.Hub.Action != kplan.ActionNone {
		out.Hub = withTypeMeta(res.Hub.ConfigMap)
	}
	for _, p := range res.Pods {
		b, err := p.MergePatch()
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %v", p.Namespace, p.Name, err)
		}
		out.Pods = append(out.Pods, podPatchOut{Pod: p.Namespace + "/" + p.Name, Patch: b})
	}
	out.Events = convert(res.Events, toEventOut)
	out.Waiting = convert(res.Waiting, toPodReasonOut)
	out.Cold = convert(res.Cold, toPodReasonOut)
	if n := len(out.Cold); n > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf(
			"%d of %d matched pods are cold: the plan never changes their revision, so the rollout cannot complete; re-create them so the webhook injects them",
			n, res.Status.MatchedPods))
	}
	return out, nil
}

// decodeSet decodes a ConfigMapSet, in its namespace, and its selector.
func decodeSet(setObj *manifest.Object) (*revision.ConfigMapSet, labels.Selector, error) {
	set := &revision.ConfigMapSet{}
	if err := setObj.Decode(set); err != nil {
		return nil, nil, err
	}
	set.Namespace = namespaceOf(setObj)
	if set.Spec.Selector == nil {
		return nil, nil, setObj.Errorf("spec.selector is missing")
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil, nil, setObj.Errorf("spec.selector: %v", err)
	}
	return set, sel, nil
}

// matchedPods returns the input's pods in the set's namespace that its selector sel
// matches.
func matchedPods(set *revision.ConfigMapSet, sel labels.Selector, objs []manifest.Object) ([]*corev1.Pod, []*manifest.Object, error) {
	all, allObjs, err := decodePods(objs)
	if err != nil {
		return nil, nil, err
	}
	var pods []*corev1.Pod
	var podObjs []*manifest.Object
	for i, p := range all {
		if p.Namespace == set.Namespace && sel.Matches(labelSet(p.Labels)) {
			pods, podObjs = append(pods, p), append(podObjs, allObjs[i])
		}
	}
	return pods, podObjs, nil
}
