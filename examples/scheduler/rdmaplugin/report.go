package rdmaplugin

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/kplan-dev/kplan"
)

// notice is something the plugin tells the cluster operator, as a Warning event on
// an object and a log line (reason empty: metrics only). For a Device object it also
// carries the values of the Device metrics.
type notice struct {
	object  runtime.Object // a *corev1.Pod or a Device object
	reason  kplan.Reason
	message string
	device  *deviceCounts
}

// deviceCounts are the metric values of one Device object.
type deviceCounts struct {
	node    string
	invalid bool
	skipped int
}

// Metrics, in the scheduler's registry (served on its /metrics endpoint).
var (
	// Only nodes whose Device object has a problem have a series.
	deviceInvalid = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "kplan", Subsystem: "rdma", Name: "device_invalid",
		Help:           "1 when the node's Device object cannot be used: no RDMA pod is placed on the node.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"node"})
	deviceVFsSkipped = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "kplan", Subsystem: "rdma", Name: "device_vfs_skipped",
		Help:           "VFs of the node's Device object left out because their PCI address is not valid.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"node"})
	annotationProblems = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "kplan", Subsystem: "rdma", Name: "annotation_problems_total",
		Help:           "Pods' device-allocated annotations reported (once per change), by event reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	registerMetrics = sync.OnceFunc(func() {
		legacyregistry.MustRegister(deviceInvalid, deviceVFsSkipped, annotationProblems)
	})
)

// maxNote bounds an event's message (the Events API refuses notes over 1 KiB).
const maxNote = 1000

// maxListedProblems caps the field errors a Device notice lists.
const maxListedProblems = 4

// deviceProblems identifies what is wrong with a Device object ("" when nothing).
func deviceProblems(d nodeDevices) string {
	if d.err != nil {
		return d.err.Error()
	}
	var parts []string
	for _, e := range d.inv.Errors() {
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "\n")
}

// deviceNotice reports a Device object's problems (or that it has none left: metrics
// only).
func deviceNotice(obj *unstructured.Unstructured, d nodeDevices) notice {
	name := obj.GetName()
	n := notice{object: obj, device: &deviceCounts{node: name}}
	switch {
	case d.err != nil:
		n.device.invalid = true
		n.reason = ReasonDeviceInvalid
		n.message = fmt.Sprintf("%v; no RDMA pod is placed on node %s until the Device object is fixed", d.err, name)
	case len(d.inv.Errors()) > 0:
		errs := d.inv.Errors()
		n.device.skipped = len(errs)
		var parts []string
		for i, e := range errs {
			if i == maxListedProblems {
				parts = append(parts, fmt.Sprintf("and %d more", len(errs)-i))
				break
			}
			parts = append(parts, e.Error())
		}
		n.reason = ReasonDeviceVFsSkipped
		n.message = fmt.Sprintf("Device %s: %d VFs left out, their PCI address is not valid (%s); the node's other devices are used", name, len(errs), strings.Join(parts, "; "))
	}
	return n
}

// emit writes the notices: a Warning event on the object and a log line each, and
// the metrics.
func (p *Plugin) emit(ns []notice) {
	for _, n := range ns {
		switch d := n.device; {
		case d == nil:
		case d.invalid:
			deviceInvalid.WithLabelValues(d.node).Set(1)
			deviceVFsSkipped.DeleteLabelValues(d.node)
		case d.skipped > 0:
			deviceInvalid.DeleteLabelValues(d.node)
			deviceVFsSkipped.WithLabelValues(d.node).Set(float64(d.skipped))
		default: // fixed
			forgetDevice(d.node)
		}
		if n.reason == "" {
			continue
		}
		if _, ok := n.object.(*corev1.Pod); ok {
			annotationProblems.WithLabelValues(string(n.reason)).Inc()
		}
		p.logger.Info("RDMA devices: "+n.message, "reason", n.reason, "object", objectRef(n.object))
		if p.recorder != nil {
			p.recorder.Eventf(n.object, nil, corev1.EventTypeWarning, string(n.reason), "CountRDMADevices", "%s", truncate(n.message, maxNote))
		}
	}
}

// forgetDevice drops a deleted Device object's metrics.
func forgetDevice(node string) {
	deviceInvalid.DeleteLabelValues(node)
	deviceVFsSkipped.DeleteLabelValues(node)
}

// objectRef names an object in a log line.
func objectRef(o runtime.Object) klog.ObjectRef {
	switch v := o.(type) {
	case *corev1.Pod:
		return klog.KObj(v)
	case *unstructured.Unstructured:
		return klog.KObj(v)
	}
	return klog.ObjectRef{}
}
