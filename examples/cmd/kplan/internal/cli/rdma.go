package cli

import (
	"errors"
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/manifest"
	"github.com/kplan-dev/kplan/rdma"
)

var rdmaCommand = &command{
	name:    "rdma",
	summary: "the RDMA (and joint GPU) allocation for a pod on a node (rdma.Allocate)",
	usage: `The input holds the node's koordinator Device object (kind Device, named like the
node), the pod to place (its koordinator.sh/rdma request and device hint and
joint-allocate annotations), and the other pods on the node (spec.nodeName),
whose device-allocated annotations say what is taken. Prints the PFs and VFs
(and GPUs) chosen, the device-allocated annotation to write, and the PCI
addresses the CNI passes to the container. When the pod does not fit, the error
starts with rdma's reason: InsufficientDevices when other pods hold what it needs,
another reason (TooFewDevices, TopologyUnsatisfiable, ...) when it never fits the
node.

  kubectl get device node-1 -o yaml > device.yaml
  kubectl get pods -A --field-selector spec.nodeName=node-1 -o yaml > on-node.yaml
  kplan rdma -f device.yaml -f on-node.yaml -f pod.yaml --pod default/trainer-0
`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.pod, "pod", "", "the pod to allocate for, as name or namespace/name (default: the only pod without an allocation)")
		fs.StringVar(&o.node, "node", "", "the node (Device object name; default: the pod's spec.nodeName, else the only Device)")
		fs.StringVar(&o.model, "model", "count", "capacity model: count (VFs or PFs) or percent (100 per PF)")
	},
	run: runRDMA,
}

type rdmaPlan struct {
	Pod            string            `json:"pod"`
	Node           string            `json:"node"`
	NICs           []nicOut          `json:"nics"`
	GPUs           []gpuOut          `json:"gpus,omitempty"`
	ExclusivePFs   []string          `json:"exclusivePFs,omitempty"`
	ExclusiveRoots []string          `json:"exclusiveRoots,omitempty"`
	Annotations    map[string]string `json:"annotations"`
	DeviceIDs      []string          `json:"deviceIDs"`
	Env            []corev1.EnvVar   `json:"env"`
}

type nicOut struct {
	PF       string   `json:"pf"`
	Minor    int32    `json:"minor"`
	PCIeRoot string   `json:"pcieRoot,omitempty"`
	NUMANode int32    `json:"numaNode"`
	Whole    bool     `json:"whole,omitempty"`
	VFs      []string `json:"vfs,omitempty"`
}

type gpuOut struct {
	Minor    int32  `json:"minor"`
	ID       string `json:"id,omitempty"`
	PCIeRoot string `json:"pcieRoot,omitempty"`
	NUMANode int32  `json:"numaNode"`
}

func runRDMA(o *options, objs []manifest.Object) (any, error) {
	model, err := choice("model", o.model, []string{"count", "percent"}, []rdma.CapacityModel{rdma.CountModel, rdma.PercentModel})
	if err != nil {
		return nil, err
	}
	pods, podObjs, err := decodePods(objs)
	if err != nil {
		return nil, err
	}
	candidates := podObjs
	if o.pod == "" {
		candidates = nil
		for i, p := range pods {
			if p.Annotations[rdma.AnnotationDeviceAllocated] == "" {
				candidates = append(candidates, podObjs[i])
			}
		}
	}
	if o.pod == "" && len(candidates) == 0 && len(podObjs) > 0 {
		return nil, usagef("every pod in the input already has a %s annotation: choose one with --pod", rdma.AnnotationDeviceAllocated)
	}
	pod, podObj, err := pickPod(o, pods, podObjs, candidates)
	if err != nil {
		return nil, err
	}
	nodeName := o.node
	if nodeName == "" {
		nodeName = pod.Spec.NodeName
	}
	devObj, err := pick(o, byKind(objs, "Device"), "Device", "node", nodeName)
	if err != nil {
		return nil, err
	}
	var dev struct {
		Spec struct {
			Devices []rdma.DeviceInfo `json:"devices"`
		} `json:"spec"`
	}
	if err := devObj.Decode(&dev); err != nil {
		return nil, err
	}
	inv, err := rdma.NewInventory(rdma.Node{Name: devObj.Name, Devices: dev.Spec.Devices})
	if err != nil {
		return nil, fmt.Errorf("%s: spec: %v", devObj.Where(), err)
	}
	// A scheduler skips a VF with a malformed address and keeps the node; a manifest
	// checker reports it.
	if errs := inv.Errors(); len(errs) > 0 {
		return nil, fmt.Errorf("%s: spec: node %s: %v", devObj.Where(), devObj.Name, errs.ToAggregate())
	}
	var others []*corev1.Pod
	var otherObjs []*manifest.Object
	for i, p := range pods {
		if p != pod && p.Spec.NodeName == devObj.Name {
			others, otherObjs = append(others, p), append(otherObjs, podObjs[i])
		}
	}
	used, err := rdma.UsedByPods(inv, others)
	if err != nil {
		return nil, blame(err, devObj, otherObjs)
	}
	req, err := rdma.RequestFromPod(pod, model)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", podObj, err)
	}
	a, err := rdma.Allocate(inv, used, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", podObj, withReason(err))
	}
	if a.Units() == 0 && len(a.GPUs) == 0 {
		return nil, podObj.Errorf("requests no %s", rdma.ResourceRDMA)
	}
	value, err := rdma.EncodeAllocated(pod.Annotations[rdma.AnnotationDeviceAllocated], a, model)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", podObj, err)
	}
	ids, err := rdma.DeviceIDs(rdma.Entries(a, model))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", podObj, err)
	}
	out := rdmaPlan{
		Pod: podObj.ID(), Node: devObj.Name, NICs: []nicOut{},
		Annotations: map[string]string{rdma.AnnotationDeviceAllocated: value},
		DeviceIDs:   ids,
		Env:         []corev1.EnvVar{rdma.PCIDeviceEnv(string(rdma.ResourceRDMA), ids)},
	}
	for _, n := range a.NICs {
		nic := nicOut{PF: n.BDF.String(), Minor: n.Minor, PCIeRoot: n.PCIeRoot, NUMANode: n.NUMANode, Whole: n.Whole}
		for _, vf := range n.VFs {
			nic.VFs = append(nic.VFs, vf.BDF.String())
		}
		out.NICs = append(out.NICs, nic)
	}
	for _, g := range a.GPUs {
		out.GPUs = append(out.GPUs, gpuOut(g))
	}
	for _, b := range a.ExclusivePFs {
		out.ExclusivePFs = append(out.ExclusivePFs, b.String())
	}
	out.ExclusiveRoots = a.ExclusiveRoots
	return out, nil
}

// withReason is an rdma error as a condition or an event shows it: the reason, then
// the message.
func withReason(err error) string {
	var e *rdma.Error
	if errors.As(err, &e) {
		return string(e.Reason) + ": " + e.Message
	}
	return err.Error()
}
