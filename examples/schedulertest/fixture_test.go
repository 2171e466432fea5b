package schedulertest

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/examples/internal/schedharness"
	"github.com/kplan-dev/kplan/rdma"
)

// shape describes a test node: roots PCIe roots (NUMA node = root index), each with
// gpus GPUs and pfs RDMA PFs, each PF with vfs VFs split evenly over vfGroups (none:
// PF mode). pfLabels label every PF.
type shape struct {
	roots, gpus, pfs, vfs int
	vfGroups              []map[string]string
	pfLabels              map[string]string
}

func i32(v int) *int32 { x := int32(v); return &x }

// makeNode builds a node's inventory of the given shape. Addresses are derived from
// the indices: PF k is 0000:<0x10+4k>:00.0 and its VF j 0000:<same bus>:<1+j/8>.<j%8>.
func makeNode(name string, s shape) rdma.Node {
	return schedharness.MakeNode(name, schedharness.Shape{Roots: s.roots, GPUs: s.gpus, PFs: s.pfs, VFs: s.vfs, VFGroups: s.vfGroups, PFLabels: s.pfLabels})
}

// podSpec is what a test pod asks for.
type podSpec struct {
	rdma  int              // koordinator.sh/rdma units
	gpus  int              // nvidia.com/gpu
	hint  *rdma.DeviceHint // the rdma entry of the allocate-hint annotation
	joint *rdma.DeviceJointAllocate
}

// makePod builds a pod with requests equal to limits, as extended resources require.
func makePod(t *testing.T, ns, name string, s podSpec) *corev1.Pod {
	t.Helper()
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}
	if s.rdma > 0 {
		res[rdma.ResourceRDMA] = *resource.NewQuantity(int64(s.rdma), resource.DecimalSI)
	}
	if s.gpus > 0 {
		res[rdma.ResourceNvidiaGPU] = *resource.NewQuantity(int64(s.gpus), resource.DecimalSI)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: res, Limits: res},
		}}},
	}
	if s.hint != nil {
		b, err := json.Marshal(rdma.DeviceAllocateHints{rdma.RDMA: s.hint})
		if err != nil {
			t.Fatal(err)
		}
		p.Annotations[rdma.AnnotationDeviceAllocateHint] = string(b)
	}
	if s.joint != nil {
		b, err := json.Marshal(s.joint)
		if err != nil {
			t.Fatal(err)
		}
		p.Annotations[rdma.AnnotationDeviceJointAllocate] = string(b)
	}
	return p
}

func selector(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}
