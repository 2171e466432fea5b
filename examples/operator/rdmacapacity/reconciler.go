package rdmacapacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kplan-dev/kplan/rdma"
)

// DeviceGVK is koordinator's Device object: one per node, named like the node.
var DeviceGVK = schema.GroupVersionKind{Group: rdma.DeviceGroup, Version: rdma.DeviceVersion, Kind: rdma.DeviceKind}

// Reconciler keeps each node's status.capacity and status.allocatable of
// koordinator.sh/rdma equal to rdma.Capacity of the node's koordinator Device object
// under Model, so pods requesting RDMA pass the scheduler's resource fit check
// (koordinator's RDMADeviceResource plugin does this in koord-manager). A node
// without a Device object loses the resource; a Device that cannot be counted leaves
// the node as it is, with a Warning event on the node whose reason and note are the
// rdma error's Reason and Message as they are (rdma.ReasonInvalidInventory for a
// malformed Device, rdma.ReasonMixedNICModes for PFs in mixed modes under
// rdma.CountModel).
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Model counts the resource: rdma.CountModel (the design: VFs in VF mode, else
	// PFs) or rdma.PercentModel (koordinator upstream: 100 per healthy PF).
	Model rdma.CapacityModel
}

// SetupWithManager registers the reconciler: Device objects and nodes (a node that
// appears after its Device, or whose status someone else rewrote).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	dev := &unstructured.Unstructured{}
	dev.SetGroupVersionKind(DeviceGVK)
	return ctrl.NewControllerManagedBy(mgr).
		Named("node-rdma-capacity").
		For(dev).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
		})).
		Complete(r)
}

// Reconcile brings one node's koordinator.sh/rdma capacity in line with its Device.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var node corev1.Node
	if err := r.Client.Get(ctx, types.NamespacedName{Name: req.Name}, &node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	dev := &unstructured.Unstructured{}
	dev.SetGroupVersionKind(DeviceGVK)
	var want *int64
	switch err := r.Client.Get(ctx, types.NamespacedName{Name: req.Name}, dev); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return ctrl.Result{}, err
	default:
		n, err := r.capacity(dev)
		var rerr *rdma.Error
		if errors.As(err, &rerr) { // the Device cannot be counted until it changes
			log.FromContext(ctx).Info("cannot count the node's Device; capacity left as it is", "node", node.Name, "reason", rerr.Reason, "message", rerr.Message)
			r.Recorder.Eventf(&node, nil, corev1.EventTypeWarning, string(rerr.Reason), "Reconcile", "%s", rerr.Message)
			return ctrl.Result{}, reconcile.TerminalError(err)
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		want = &n
	}
	patch := nodeRDMAPatch(&node, want)
	l := log.FromContext(ctx)
	if patch == nil {
		l.V(1).Info("node capacity up to date", "node", node.Name, "capacity", capacityText(want))
		return ctrl.Result{}, nil
	}
	before := "none" // read first: the patch's answer overwrites node
	if q, ok := node.Status.Capacity[rdma.ResourceRDMA]; ok {
		before = q.String()
	}
	if err := r.Client.Status().Patch(ctx, &node, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return ctrl.Result{}, fmt.Errorf("node %s: status: %w", node.Name, err)
	}
	reason := reasonDeviceCounted
	if want == nil {
		reason = reasonNoDevice
	}
	l.Info("wrote node capacity", "action", "patch", "node", node.Name, "resource", rdma.ResourceRDMA,
		"capacity", capacityText(want), "previous", before, "model", r.Model, "reason", reason)
	return ctrl.Result{}, nil
}

// The reasons of the capacity writes in the log.
const (
	// reasonDeviceCounted: the node's capacity is its Device's count.
	reasonDeviceCounted = "DeviceCounted"
	// reasonNoDevice: the node has no Device object; the resource is removed.
	reasonNoDevice = "NoDevice"
)

// capacityText is a capacity for the log ("none": the resource removed).
func capacityText(want *int64) string {
	if want == nil {
		return "none"
	}
	return fmt.Sprint(*want)
}

// capacity counts a Device object under the reconciler's model. Its errors are
// rdma's, which name the Device object or its node.
func (r *Reconciler) capacity(dev *unstructured.Unstructured) (int64, error) {
	n, err := rdma.NodeFromDevice(dev)
	if err != nil {
		return 0, err
	}
	inv, err := rdma.NewInventory(n)
	if err != nil {
		return 0, err
	}
	rl, err := rdma.Capacity(inv, r.Model)
	if err != nil {
		return 0, err
	}
	q := rl[rdma.ResourceRDMA]
	return q.Value(), nil
}

// nodeRDMAPatch returns the merge patch that sets (or, with want nil, removes)
// koordinator.sh/rdma in the node's capacity and allocatable, or nil when both
// already hold it. The node is not changed.
func nodeRDMAPatch(node *corev1.Node, want *int64) []byte {
	same := func(l corev1.ResourceList) bool {
		q, ok := l[rdma.ResourceRDMA]
		if want == nil {
			return !ok
		}
		return ok && q.Value() == *want && q.CmpInt64(*want) == 0
	}
	if same(node.Status.Capacity) && same(node.Status.Allocatable) {
		return nil
	}
	var v any // null removes the key
	if want != nil {
		v = fmt.Sprint(*want)
	}
	entry := map[string]any{string(rdma.ResourceRDMA): v}
	b, _ := json.Marshal(map[string]any{"status": map[string]any{"capacity": entry, "allocatable": entry}})
	return b
}
