package rdma_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/rdma"
)

// reasons is every Reason constant of the package, with the sentinel an *Error of
// that reason wraps (nil: none).
var reasons = []struct {
	name   string
	reason kplan.Reason
	wraps  error
}{
	{"ReasonInsufficientDevices", rdma.ReasonInsufficientDevices, rdma.ErrInsufficient},
	{"ReasonTooFewDevices", rdma.ReasonTooFewDevices, rdma.ErrUnsatisfiable},
	{"ReasonTopologyUnsatisfiable", rdma.ReasonTopologyUnsatisfiable, rdma.ErrUnsatisfiable},
	{"ReasonMixedNICModes", rdma.ReasonMixedNICModes, rdma.ErrUnsatisfiable},
	{"ReasonInvalidRequest", rdma.ReasonInvalidRequest, rdma.ErrUnsatisfiable},
	{"ReasonInvalidInventory", rdma.ReasonInvalidInventory, rdma.ErrUnsatisfiable},
	{"ReasonInvalidOptions", rdma.ReasonInvalidOptions, rdma.ErrUnsatisfiable},
	{"ReasonInvalidAllocation", rdma.ReasonInvalidAllocation, nil},
}

// TestReasonsAreValidConditionReasons: a reconciler can put every reason into a
// metav1.Condition as it is, and the API server accepts it.
func TestReasonsAreValidConditionReasons(t *testing.T) {
	for _, r := range reasons {
		t.Run(r.name, func(t *testing.T) {
			c := metav1.Condition{
				Type: "RDMAReady", Status: metav1.ConditionFalse, Reason: string(r.reason),
				Message: "node n1: rdma: need 9 VFs, node has 8", LastTransitionTime: metav1.Unix(1, 0),
			}
			if errs := metav1validation.ValidateConditions([]metav1.Condition{c}, field.NewPath("status", "conditions")); len(errs) > 0 {
				t.Fatalf("reason %q: %v", r.reason, errs.ToAggregate())
			}
			if !strings.HasPrefix(r.name, "Reason") || string(r.reason) != strings.TrimPrefix(r.name, "Reason") {
				t.Fatalf("constant %s has the value %q; a reason's constant is Reason and its value", r.name, r.reason)
			}
		})
	}
}

// TestEveryReasonIsListed: the list above holds every kplan.Reason constant the
// package declares, so a new reason cannot miss the validation.
func TestEveryReasonIsListed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var declared []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				v := spec.(*ast.ValueSpec)
				if sel, ok := v.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Reason" {
					for _, n := range v.Names {
						declared = append(declared, n.Name)
					}
				}
			}
		}
	}
	var listed []string
	for _, r := range reasons {
		listed = append(listed, r.name)
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if len(declared) == 0 || !slices.Equal(declared, listed) {
		t.Fatalf("declared reasons %v, listed %v", declared, listed)
	}
}

// TestErrorWrapsTheSentinelOfItsReason: errors.Is keeps telling "not now" from
// "never" for every reason.
func TestErrorWrapsTheSentinelOfItsReason(t *testing.T) {
	for _, r := range append(reasons, struct {
		name   string
		reason kplan.Reason
		wraps  error
	}{"a reason of another package", "ProgressDeadlineExceeded", nil}) {
		t.Run(r.name, func(t *testing.T) {
			err := error(&rdma.Error{Reason: r.reason, Message: "node n1: rdma: something"})
			ins, uns := errors.Is(err, rdma.ErrInsufficient), errors.Is(err, rdma.ErrUnsatisfiable)
			if ins != (r.wraps == rdma.ErrInsufficient) || uns != (r.wraps == rdma.ErrUnsatisfiable) {
				t.Fatalf("wraps ErrInsufficient=%v ErrUnsatisfiable=%v, want %v", ins, uns, r.wraps)
			}
			if err.Error() != "node n1: rdma: something" {
				t.Fatalf("Error() = %q, want the message", err.Error())
			}
		})
	}
}

// TestErrorsCarryReasons: every function whose error a controller or scheduler plugin
// reports returns an *Error with the reason that says what is wrong.
func TestErrorsCarryReasons(t *testing.T) {
	minor := func(m int32) *int32 { return &m }
	pf := func(m int32, bdf string, vfs ...string) rdma.DeviceInfo {
		d := rdma.DeviceInfo{Type: rdma.RDMA, Minor: minor(m), UUID: bdf, Health: true,
			Topology: &rdma.DeviceTopology{PCIEID: "pci0000:17", BusID: bdf}}
		if len(vfs) > 0 {
			g := rdma.VirtualFunctionGroup{}
			for i, v := range vfs {
				g.VFs = append(g.VFs, rdma.VirtualFunction{Minor: int32(i), BusID: v})
			}
			d.VFGroups = []rdma.VirtualFunctionGroup{g}
		}
		return d
	}
	mixed, err := rdma.NewInventory(rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		pf(0, "0000:18:00.0"), pf(1, "0000:af:00.0", "0000:af:00.2")}})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(annotations map[string]string, rdmaQty string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "llm-0", Annotations: annotations},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine"}}}}
		if rdmaQty != "" {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{rdma.ResourceRDMA: resource.MustParse(rdmaQty)}
		}
		return p
	}
	strangeVF := pod(map[string]string{rdma.AnnotationDeviceAllocated: `{"rdma":[{"minor":1,"busID":"0000:af:00.0","extension":{"vfs":[{"minor":-1,"busID":"0000:af:00.7"}]}}]}`}, "")
	for _, tc := range []struct {
		name   string
		call   func() error
		reason kplan.Reason
		text   string
	}{
		{"NodeFromDevice: nil", func() error { _, err := rdma.NodeFromDevice(nil); return err }, rdma.ReasonInvalidInventory, "nil object"},
		{"NodeFromDevice: another kind", func() error {
			_, err := rdma.NodeFromDevice(&unstructured.Unstructured{Object: map[string]any{"kind": "Node", "metadata": map[string]any{"name": "n1"}}})
			return err
		}, rdma.ReasonInvalidInventory, `rdma: Device n1: kind "Node", want Device`},
		{"NewInventory: a PF without an address", func() error {
			_, err := rdma.NewInventory(rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{{Type: rdma.RDMA, Minor: minor(0), Health: true}}})
			return err
		}, rdma.ReasonInvalidInventory, "node n1: devices[0].topology.busID: Required value"},
		{"Capacity: nil", func() error { _, err := rdma.Capacity(nil, rdma.CountModel); return err }, rdma.ReasonInvalidInventory, "nil inventory"},
		{"Capacity: mixed modes", func() error { _, err := rdma.Capacity(mixed, rdma.CountModel); return err }, rdma.ReasonMixedNICModes, "node n1: rdma: healthy PFs with and without VFs"},
		{"Capacity: an unknown model", func() error { _, err := rdma.Capacity(mixed, "Share"); return err }, rdma.ReasonInvalidOptions, `capacity model "Share" is not Count or Percent`},
		{"Allocate: the node's mode on a mixed node", func() error { return rdma.Fits(mixed, nil, rdma.Request{Count: 1}) }, rdma.ReasonMixedNICModes, "set the request's kind"},
		{"RequestFromPod: nil", func() error { _, err := rdma.RequestFromPod(nil, rdma.CountModel); return err }, rdma.ReasonInvalidRequest, "nil pod"},
		{"RequestFromPod: half a device", func() error { _, err := rdma.RequestFromPod(pod(nil, "1.5"), rdma.CountModel); return err }, rdma.ReasonInvalidRequest, "pod ml/llm-0: resource koordinator.sh/rdma: 1500m is not a whole number"},
		{"RequestFromPod: a hint that is not JSON", func() error {
			_, err := rdma.RequestFromPod(pod(map[string]string{rdma.AnnotationDeviceAllocateHint: "{"}, "1"), rdma.CountModel)
			return err
		}, rdma.ReasonInvalidRequest, "pod ml/llm-0: annotation " + rdma.AnnotationDeviceAllocateHint},
		{"RequestFromPod: an unknown model", func() error { _, err := rdma.RequestFromPod(pod(nil, "1"), "Share"); return err }, rdma.ReasonInvalidOptions, `pod ml/llm-0: capacity model "Share"`},
		{"Request.Validate", func() error { return rdma.Request{Count: -1}.Validate() }, rdma.ReasonInvalidRequest, "count -1 is negative"},
		{"UsedByPods: nil inventory", func() error { _, err := rdma.UsedByPods(nil, nil); return err }, rdma.ReasonInvalidInventory, "nil inventory"},
		{"UsedByPods: a VF the PF does not have", func() error { _, err := rdma.UsedByPods(mixed, []*corev1.Pod{strangeVF}); return err }, rdma.ReasonInvalidAllocation, "pod ml/llm-0: annotation " + rdma.AnnotationDeviceAllocated},
		{"UsedByPods: an annotation that is not JSON", func() error {
			_, err := rdma.UsedByPods(mixed, []*corev1.Pod{pod(map[string]string{rdma.AnnotationDeviceAllocated: "{"}, "")})
			return err
		}, rdma.ReasonInvalidAllocation, "pod ml/llm-0: annotation " + rdma.AnnotationDeviceAllocated},
		{"AllocationFromPod: nil pod", func() error { _, err := rdma.AllocationFromPod(mixed, nil); return err }, rdma.ReasonInvalidAllocation, "nil pod"},
		{"AllocationFromPod: a VF the PF does not have", func() error { _, err := rdma.AllocationFromPod(mixed, strangeVF); return err }, rdma.ReasonInvalidAllocation, "VF 0000:af:00.7 is not on PF 0000:af:00.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var e *rdma.Error
			if !errors.As(err, &e) || e.Reason != tc.reason || !strings.Contains(e.Message, tc.text) || err.Error() != e.Message {
				t.Fatalf("got %#v (%v), want reason %s and a message with %q", e, err, tc.reason, tc.text)
			}
		})
	}
}
