package rdmaplugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kplan-dev/kplan/rdma"
)

// signKey names the plugin's fragment of a pod's scheduling signature.
const signKey = "kplan.dev/rdma.Request"

// SignPod signs a pod with its RDMA request (canonical: the same request gives the
// same signature), so pods asking the same may be batched: the scheduler then offers
// a pod the next node of the previous pod's ranking, and only when the node the
// previous pod took cannot take this one (pods that fill a node); Filter still runs on
// the node offered. Pods without a request sign with nothing; a pod whose request does
// not decode is not signed.
func (p *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	req, err := rdma.RequestFromPod(pod, p.model)
	if err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	if req.IsZero() {
		return nil, nil
	}
	return []fwk.SignFragment{{Key: signKey, Value: req}}, nil
}
