package cli

import (
	"flag"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/manifest"
	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/revision"
	"github.com/kplan-dev/kplan/webhookpatch"
)

var patchCommand = &command{
	name:    "patch",
	summary: "the JSON patch a mutating webhook returns for a pod (ranktable.Inject, revision.Inject, webhookpatch.Diff)",
	usage: `The input holds the pod as it arrives at the webhook and what the webhook reads:
its owner annotated kthena.io/ranktable-template (and the template ConfigMaps,
unless they are kplan's library templates) for the ranktable injection, the
ConfigMapSets whose selectors match the pod and the other pods they match for
the ConfigMapSet injection. Prints what was injected and the RFC 6902 patch.

  kplan patch -f pod.yaml -f owner.yaml -f set.yaml --kube-version v1.31.0
`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.pod, "pod", "", "the pod to patch, as name or namespace/name, when the input holds several")
		fs.StringVar(&o.templatesNamespace, "templates-namespace", ranktable.DefaultTemplateNamespace, "namespace of the template ConfigMaps")
		fs.StringVar(&o.kubeVersion, "kube-version", "v1.31.0", "the cluster's version: native sidecars from v1.29")
		fs.StringVar(&o.sidecarImage, "sidecar-image", "kplan/configmapset-reload:latest", "the ConfigMapSet reload sidecar's image")
		fs.StringVar(&o.waitImage, "wait-image", ranktable.DefaultWaitImage, "the wait-ranktable init container's image")
		fs.BoolVar(&o.singleGroup, "single-group", false, "the owner's pods carry no serving-group label: they are all one serving group")
		fs.Var(&o.now, "now", "the current time, RFC 3339, written as the revision timestamp (default: the clock)")
	},
	run: runPatch,
}

type patchPlan struct {
	Pod       string                   `json:"pod"`
	Injected  []string                 `json:"injected"`
	PatchType string                   `json:"patchType,omitempty"`
	Patch     []webhookpatch.Operation `json:"patch"`
}

func runPatch(o *options, objs []manifest.Object) (any, error) {
	if _, err := webhookpatch.SidecarModeFor(o.kubeVersion); err != nil {
		return nil, usagef("--kube-version %q: %v", o.kubeVersion, err)
	}
	pods, podObjs, err := decodePods(objs)
	if err != nil {
		return nil, err
	}
	pod, podObj, err := pickPod(o, pods, podObjs, podObjs)
	if err != nil {
		return nil, err
	}
	mutated := pod.DeepCopy()
	out := patchPlan{Pod: podObj.ID(), Injected: []string{}}

	// The ranktable injection, when the pod's controller is an annotated owner.
	if ownerObj := controllerOf(pod, rankTableOwners(objs)); ownerObj != nil {
		owner, tmpl, err := loadOwner(ownerObj, objs, o.templatesNamespace)
		if err != nil {
			return nil, err
		}
		cmName, err := ranktable.PodConfigMapName(&owner, tmpl, ranktable.Grouping{SingleGroup: o.singleGroup}, pod)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", podObj, err)
		}
		if _, err := ranktable.Inject(mutated, ranktable.InjectOptions{ConfigMapName: cmName, Template: tmpl, Image: o.waitImage}); err != nil {
			return nil, fmt.Errorf("%s: %v", podObj, err)
		}
		out.Injected = append(out.Injected, "ranktable ConfigMap "+cmName+" ("+ownerObj.ID()+")")
	}

	// The ConfigMapSet injections, in name order.
	setObjs := byKind(objs, "ConfigMapSet")
	sort.SliceStable(setObjs, func(i, j int) bool { return setObjs[i].Name < setObjs[j].Name })
	for _, setObj := range setObjs {
		if namespaceOf(setObj) != pod.Namespace {
			continue
		}
		set, sel, err := decodeSet(setObj)
		if err != nil {
			return nil, err
		}
		if !sel.Matches(labelSet(pod.Labels)) {
			continue
		}
		matched, _, err := matchedPods(set, sel, objs)
		if err != nil {
			return nil, err
		}
		var others []*corev1.Pod
		for _, p := range matched {
			if p.Name != pod.Name {
				others = append(others, p)
			}
		}
		res, err := revision.Inject(mutated, revision.InjectInput{
			Set: set, Pods: others, KubeVersion: o.kubeVersion,
			Sidecar: revision.SidecarOptions{Image: o.sidecarImage}, Now: o.now.Time(),
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", podObj, setObj.ID(), err)
		}
		if res.Changed {
			out.Injected = append(out.Injected, "ConfigMapSet "+set.Name+" revision "+res.Revision)
		}
	}
	if errs := webhookpatch.Validate(mutated); len(errs) > 0 {
		return nil, fmt.Errorf("%s: the mutated pod is invalid: %v", podObj, errs.ToAggregate())
	}
	ops, err := webhookpatch.Diff(pod, mutated)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", podObj, err)
	}
	_, pt, err := webhookpatch.Patch(ops)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", podObj, err)
	}
	out.Patch = ops
	if out.Patch == nil {
		out.Patch = []webhookpatch.Operation{}
	}
	if pt != nil {
		out.PatchType = string(*pt)
	}
	return out, nil
}

// controllerOf returns the owner among owners that is pod's controller.
func controllerOf(pod *corev1.Pod, owners []*manifest.Object) *manifest.Object {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return nil
	}
	for _, o := range owners {
		if o.Kind == ref.Kind && o.Name == ref.Name && namespaceOf(o) == pod.Namespace {
			return o
		}
	}
	return nil
}
