// Every example of the package is in this one file, as the project requires (they
// compile with no other test file and show only the exported API); it runs past 400
// lines because each entry point has its own example, each copyable as shown.

package rdma_test

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kplan-dev/kplan/rdma"
)

// The main flow of a scheduler plugin, end to end. A node's Device object lists a
// GPU and a NIC with two VFs under one PCIe root; a pod asks for one GPU and one VF
// on the same root. Filter (Fits) and Score run on the node, Reserve allocates and
// records the allocation in the node's Used, PreBind writes the device-allocated
// annotation. After a restart, the plugin rebuilds Used from the pods' annotations
// alone, and a second pod of the same shape no longer fits.
func Example() {
	minor := func(m int32) *int32 { return &m }
	inv, err := rdma.NewInventory(rdma.Node{Name: "gpu-node-1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true,
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true,
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{
				{Minor: 0, BusID: "0000:18:00.2"}, {Minor: 1, BusID: "0000:18:00.3"}}}}},
	}})
	if err != nil {
		panic(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "llm-0", Annotations: map[string]string{
			rdma.AnnotationDeviceAllocateHint:  `{"rdma":{"vfSelector":{}}}`,
			rdma.AnnotationDeviceJointAllocate: `{"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"}`,
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{rdma.ResourceRDMA: resource.MustParse("1"), rdma.ResourceNvidiaGPU: resource.MustParse("1")},
		}}}},
	}

	// PreFilter: the pod's request, once per pod.
	req, err := rdma.RequestFromPod(pod, rdma.CountModel)
	if err != nil {
		panic(err)
	}
	// Filter and Score, per node, against what the node's pods hold (nothing yet).
	// Score: 1 of the root's 2 VFs left free, (2-1)*100/2 = 50.
	used := new(rdma.Used)
	fmt.Println("fits:", rdma.Fits(inv, used, req))
	score, err := rdma.Score(inv, used, req, rdma.ScoreOptions{Strategy: rdma.LeastAllocated})
	fmt.Println("score:", score, err)
	// Reserve: allocate and record.
	alloc, err := rdma.Allocate(inv, used, req)
	if err != nil {
		panic(err)
	}
	used.Add(alloc)
	fmt.Println("GPU", alloc.GPUs[0].Minor, "VF", alloc.NICs[0].VFs[0].BDF, "on", alloc.NICs[0].PCIeRoot)
	// PreBind: the annotation the CNI and a restarted scheduler read.
	value, err := rdma.EncodeAllocated(pod.Annotations[rdma.AnnotationDeviceAllocated], alloc, rdma.CountModel)
	if err != nil {
		panic(err)
	}
	pod.Annotations[rdma.AnnotationDeviceAllocated] = value
	fmt.Println(value)

	// After a restart: Used from the bound pods' annotations.
	pod.Spec.NodeName = "gpu-node-1"
	restarted, err := rdma.UsedByPods(inv, []*corev1.Pod{pod})
	if err != nil {
		panic(err)
	}
	fmt.Println("held after restart: GPUs", restarted.GPUs(), "VFs", restarted.VFs())
	err = rdma.Fits(inv, restarted, req)
	fmt.Println("a second pod:", errors.Is(err, rdma.ErrInsufficient), err)
	// Output:
	// fits: <nil>
	// score: 50 <nil>
	// GPU 0 VF 0000:18:00.2 on pci0000:17
	// {"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"100","koordinator.sh/gpu-memory-ratio":"100"}}],"rdma":[{"minor":0,"resources":{"koordinator.sh/rdma":"1"},"id":"0000:18:00.0","extension":{"vfs":[{"minor":-1,"busID":"0000:18:00.2"}]},"busID":"0000:18:00.0"}]}
	// held after restart: GPUs [0] VFs [0000:18:00.2]
	// a second pod: true node gpu-node-1: rdma: need 1 GPU, 0 free
}

func ExampleAllocate() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, err := rdma.NewInventory(node)
	if err != nil {
		panic(err)
	}
	storage := &metav1.LabelSelector{MatchLabels: map[string]string{"rdma-type": "storage"}}
	a, err := rdma.Allocate(inv, nil, rdma.Request{Count: 2, Selector: storage})
	if err != nil {
		panic(err)
	}
	for _, n := range a.NICs {
		fmt.Println("PF", n.BDF, "VFs", n.VFs)
	}
	used := new(rdma.Used)
	used.Add(a)
	_, err = rdma.Allocate(inv, used, rdma.Request{Count: 1, Selector: storage})
	fmt.Println(err)
	// Output:
	// PF 0000:af:00.0 VFs [{0 0000:af:00.2} {1 0000:af:00.3}]
	// node n1: rdma: need 1 VF matching {rdma-type=storage}, 0 free (PF 0000:af:00.0: 0 of 2 free)
}

func ExampleAllocate_joint() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	a, err := rdma.Allocate(inv, nil, rdma.Request{Count: 1, GPUs: 1, Joint: rdma.JointSamePCIe})
	if err != nil {
		panic(err)
	}
	fmt.Println("GPU", a.GPUs[0].Minor, "on", a.GPUs[0].PCIeRoot, "VF", a.NICs[0].VFs[0].BDF, "on", a.NICs[0].PCIeRoot)
	// Output: GPU 0 on pci0000:17 VF 0000:18:00.2 on pci0000:17
}

func ExampleEncodeAllocated() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	a, _ := rdma.Allocate(inv, nil, rdma.Request{Count: 1})
	value, err := rdma.EncodeAllocated(`{"gpu":[{"minor":0}]}`, a, rdma.CountModel)
	fmt.Println(value, err)
	// Output: {"gpu":[{"minor":0}],"rdma":[{"minor":0,"resources":{"koordinator.sh/rdma":"1"},"id":"0000:18:00.0","extension":{"vfs":[{"minor":-1,"busID":"0000:18:00.2"}]},"busID":"0000:18:00.0"}]} <nil>
}

func ExampleDecodeAllocated() {
	a, err := rdma.DecodeAllocated(`{"rdma":[{"minor":0,"resources":{"koordinator.sh/rdma":"1"},"extension":{"vfs":[{"minor":-1,"busID":"0000:01:00.2"}]},"busID":"0000:01:00.0"}]}`)
	if err != nil {
		panic(err)
	}
	pf, _ := rdma.EntryPF(a.RDMA[0])
	fmt.Println(pf, a.RDMA[0].Extension.VirtualFunctions[0].BusID)
	_, err = rdma.DecodeAllocated(`{"rdma":[{"minor":0,"busID":"1:00.0"}]}`)
	fmt.Println(err)
	// Output:
	// 0000:01:00.0 0000:01:00.2
	// annotation scheduling.koordinator.sh/device-allocated: rdma[0].busID: "1:00.0" is not a PCI address (domain:bus:device.function like 0000:3b:00.0): wrong length
}

func ExampleParseBDF() {
	b, err := rdma.ParseBDF("10001:80:1F.7")
	fmt.Println(b, err)
	_, err = rdma.ParseBDF("0000:3b:00.8")
	fmt.Println(err)
	// Output:
	// 10001:80:1f.7 <nil>
	// "0000:3b:00.8" is not a PCI address (domain:bus:device.function like 0000:3b:00.0): function is above 7
}

func ExampleCapacity() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	c, _ := rdma.Capacity(inv, rdma.CountModel)
	p, _ := rdma.Capacity(inv, rdma.PercentModel)
	q, pq := c[rdma.ResourceRDMA], p[rdma.ResourceRDMA]
	fmt.Println(q.String(), pq.String())
	// Output: 3 200
}

func ExampleNewInventory() {
	minor := func(m int32) *int32 { return &m }
	_, err := rdma.NewInventory(rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{{Type: rdma.RDMA, Minor: minor(0), UUID: "eth0"}}})
	fmt.Println(err)
	// Output: node n1: devices[0].id: Invalid value: "eth0": no topology.busID, and "eth0" is not a PCI address (domain:bus:device.function like 0000:3b:00.0): wrong length
}

func ExampleFits() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	holder := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", Annotations: map[string]string{
		rdma.AnnotationDeviceAllocated: `{"rdma":[{"minor":1,"id":"0000:af:00.0","extension":{"vfs":[{"minor":-1,"busID":"0000:af:00.2"}]}}]}`,
	}}}
	used, err := rdma.UsedByPods(inv, []*corev1.Pod{holder})
	if err != nil {
		panic(err)
	}
	fmt.Println(rdma.Fits(inv, used, rdma.Request{Count: 2}))
	fmt.Println(rdma.Fits(inv, used, rdma.Request{Count: 3}))
	// Output:
	// <nil>
	// node n1: rdma: need 3 VFs, 2 free (PF 0000:18:00.0: 1 of 1 free; PF 0000:af:00.0: 1 of 2 free)
}

func ExampleScore() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	least, _ := rdma.Score(inv, nil, rdma.Request{Count: 1}, rdma.ScoreOptions{Strategy: rdma.LeastAllocated})
	most, _ := rdma.Score(inv, nil, rdma.Request{Count: 1}, rdma.ScoreOptions{Strategy: rdma.MostAllocated})
	fmt.Println(least, most) // 3 VFs: (3-1)*100/3 = 66, 1*100/3 = 33
	// Output: 66 33
}

func ExampleRequestFromPod() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", Annotations: map[string]string{
		rdma.AnnotationDeviceAllocateHint: `{"rdma":{"selector":{"matchLabels":{"rdma-type":"storage"}},"allocateStrategy":"ApplyForAll"}}`,
	}}}
	pod.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{rdma.ResourceRDMA: resource.MustParse("1")}}}}
	req, _ := rdma.RequestFromPod(pod, rdma.CountModel)
	inv, _ := rdma.NewInventory(node)
	a, _ := rdma.Allocate(inv, nil, req)
	fmt.Println(req.All, a.Units())
	// Output: true 2
}

func ExampleDeviceIDs() {
	a, _ := rdma.DecodeAllocated(`{"rdma":[{"minor":1,"id":"0000:af:00.0"},{"minor":0,"busID":"0000:18:00.0","extension":{"vfs":[{"minor":-1,"busID":"0000:18:00.2"}]}}]}`)
	ids, _ := rdma.DeviceIDs(a.RDMA)
	fmt.Println(ids)
	env := rdma.PCIDeviceEnv("koordinator.sh/rdma", ids)
	fmt.Println(env.Name + "=" + env.Value)
	// Output:
	// [0000:18:00.2 0000:af:00.0]
	// PCIDEVICE_KOORDINATOR_SH_RDMA=0000:18:00.2,0000:af:00.0
}

func ExampleValidateNode() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	n := node
	n.Devices[1].VFGroups[0].VFs[0].BusID = "0000:18:00.9"
	for _, e := range rdma.ValidateNode(n) {
		fmt.Println(e)
	}
	// Output: devices[1].vfGroups[0].vfs[0].busID: Invalid value: "0000:18:00.9": "0000:18:00.9" is not a PCI address (domain:bus:device.function like 0000:3b:00.0): function is above 7
}

func ExampleDRADevices() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	for _, d := range rdma.DRADevices(inv) {
		root := d.Attributes[rdma.DRAAttributePCIeRoot].StringValue
		fmt.Println(d.Name, *root, *d.Attributes[rdma.DRAAttributeKind].StringValue)
	}
	// Output:
	// gpu-0 pci0000:17 gpu
	// pf-0000-18-00-0 pci0000:17 pf
	// vf-0000-18-00-2 pci0000:17 vf
	// pf-0000-af-00-0 pci0000:ae pf
	// vf-0000-af-00-2 pci0000:ae vf
	// vf-0000-af-00-3 pci0000:ae vf
}

func ExampleDecodeAllocateHints() {
	h, err := rdma.DecodeAllocateHints(`{"rdma":{"vfSelector":{"matchLabels":{"rdma-type":"storage"}},"requiredTopologyScope":"PCIe","exclusivePolicy":"PCIeLevel"}}`)
	if err != nil {
		panic(err)
	}
	fmt.Println(h[rdma.RDMA].VFSelector.MatchLabels, h[rdma.RDMA].RequiredTopologyScope, h[rdma.RDMA].ExclusivePolicy)
	_, err = rdma.DecodeAllocateHints(`{"rdma":{"allocateStrategy":"Greedy"}}`)
	fmt.Println(err)
	// Output:
	// map[rdma-type:storage] PCIe PCIeLevel
	// annotation scheduling.koordinator.sh/device-allocate-hint: rdma.allocateStrategy: unknown "Greedy"
}

func ExampleDecodeJointAllocate() {
	j, err := rdma.DecodeJointAllocate(`{"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"}`)
	fmt.Println(j.DeviceTypes, j.RequiredScope, err)
	// Output: [gpu rdma] SamePCIe <nil>
}

func ExampleUsed_Add() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	a, _ := rdma.Allocate(inv, nil, rdma.Request{Count: 1, Exclusive: rdma.ExclusivePCIe})
	used := new(rdma.Used)
	used.Add(a)
	fmt.Println(used.VFs(), used.ExclusiveRoots())
	// The root is held exclusively, so only the storage NIC's VFs remain.
	b, _ := rdma.Allocate(inv, used, rdma.Request{Count: 2})
	fmt.Println(b.NICs[0].BDF, len(b.NICs[0].VFs))
	// Output:
	// [0000:18:00.2] [pci0000:17]
	// 0000:af:00.0 2
}

// A GPU plugin chose GPU 0 and wrote its share first; the NIC is placed next to it
// (WithGPUs) and the GPU plugin's entry is kept as it was.
func ExampleEncodeAllocated_gpuPluginShares() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	a, _ := rdma.Allocate(inv, nil, rdma.Request{Count: 1, WithGPUs: []int32{0}, Joint: rdma.JointSamePCIe})
	value, err := rdma.EncodeAllocated(`{"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"50"}}]}`, a, rdma.CountModel)
	fmt.Println(value, err)
	// Output: {"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"50"}}],"rdma":[{"minor":0,"resources":{"koordinator.sh/rdma":"1"},"id":"0000:18:00.0","extension":{"vfs":[{"minor":-1,"busID":"0000:18:00.2"}]},"busID":"0000:18:00.0"}]} <nil>
}

func ExampleEntries() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	a, _ := rdma.Allocate(inv, nil, rdma.Request{Kind: rdma.WholePF, Count: 1, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"rdma-type": "storage"}}})
	for _, model := range []rdma.CapacityModel{rdma.CountModel, rdma.PercentModel} {
		e := rdma.Entries(a, model)[0]
		q := e.Resources[rdma.ResourceRDMA]
		fmt.Println(e.Minor, e.ID, e.BusID, q.String(), e.Extension == nil)
	}
	// Output:
	// 1 0000:af:00.0 0000:af:00.0 1 true
	// 1 0000:af:00.0 0000:af:00.0 100 true
}

func ExampleAllocated_Encode() {
	a, _ := rdma.DecodeAllocated(`{ "rdma": [ {"minor": 0, "busID": "0000:18:00.0"} ], "fpga": [ {"minor": 2} ] }`)
	value, err := a.Encode()
	fmt.Println(value, err)
	// Output: {"fpga":[{"minor":2}],"rdma":[{"minor":0,"busID":"0000:18:00.0"}]} <nil>
}

func ExampleAllocated_GPUMinors() {
	a, _ := rdma.DecodeAllocated(`{"gpu":[{"minor":3,"resources":{"koordinator.sh/gpu-core":"50"}},{"minor":1}]}`)
	minors, err := a.GPUMinors()
	fmt.Println(minors, err)
	// Output: [3 1] <nil>
}

func ExampleUsedByPods() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	running := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "trainer-0", Annotations: map[string]string{
			rdma.AnnotationDeviceAllocated: `{"rdma":[{"minor":1,"extension":{"vfs":[{"minor":-1,"busID":"0000:af:00.2"}]},"busID":"0000:af:00.0"}],"gpu":[{"minor":0}]}`,
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	used, err := rdma.UsedByPods(inv, []*corev1.Pod{running})
	fmt.Println(used.VFs(), used.GPUs(), err)
	// Output: [0000:af:00.2] [0] <nil>
}

func ExampleDeviceIDsFromPod() {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "trainer-0", Annotations: map[string]string{
		rdma.AnnotationDeviceAllocated: `{"rdma":[{"minor":1,"extension":{"vfs":[{"minor":-1,"busID":"0000:af:00.3"},{"minor":-1,"busID":"0000:af:00.2"}]},"busID":"0000:af:00.0"},{"minor":0,"id":"0000:18:00.0"}]}`,
	}}}
	// What a CNI (Multus, the SR-IOV CNI) needs: the PCI addresses handed to the pod.
	ids, err := rdma.DeviceIDsFromPod(pod)
	fmt.Println(ids, err)
	// Output: [0000:18:00.0 0000:af:00.2 0000:af:00.3] <nil>
}

// A scheduler plugin's Filter tells "not now" from "never" with errors.Is.
func ExampleErrInsufficient() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	storage := &metav1.LabelSelector{MatchLabels: map[string]string{"rdma-type": "storage"}}
	a, _ := rdma.Allocate(inv, nil, rdma.Request{Count: 2, Selector: storage})
	used := new(rdma.Used)
	used.Add(a)
	for _, req := range []rdma.Request{{Count: 1, Selector: storage}, {Count: 3, Selector: storage}} {
		err := rdma.Fits(inv, used, req)
		switch {
		case errors.Is(err, rdma.ErrInsufficient):
			fmt.Println("Unschedulable:", err)
		case errors.Is(err, rdma.ErrUnsatisfiable):
			fmt.Println("UnschedulableAndUnresolvable:", err)
		}
	}
	// Output:
	// Unschedulable: node n1: rdma: need 1 VF matching {rdma-type=storage}, 0 free (PF 0000:af:00.0: 0 of 2 free)
	// UnschedulableAndUnresolvable: node n1: rdma: need 3 VFs matching {rdma-type=storage}, node has 2 (PF 0000:af:00.0: 2 VFs)
}

// A controller reports an error as it is: the reason goes into a condition (or an
// event) unchanged, the message beside it. Here a node's NICs mix PF and VF modes, so
// its capacity cannot be counted.
func ExampleError() {
	minor := func(m int32) *int32 { return &m }
	inv, _ := rdma.NewInventory(rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true,
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}}}}},
	}})
	_, err := rdma.Capacity(inv, rdma.CountModel)
	var e *rdma.Error
	if errors.As(err, &e) {
		c := metav1.Condition{Type: "RDMACapacityKnown", Status: metav1.ConditionFalse, Reason: string(e.Reason), Message: e.Message}
		fmt.Println(c.Reason)
		fmt.Println(c.Message)
	}
	fmt.Println("never:", errors.Is(err, rdma.ErrUnsatisfiable))
	// Output:
	// MixedNICModes
	// node n1: rdma: healthy PFs with and without VFs on one node; a node's NICs must all be in PF or all in VF mode
	// never: true
}

// Reserve adds a pod's allocation to the node's Used; Unreserve (or the pod's
// deletion) removes it again. A GPU two pods share stays held until both are gone.
func ExampleUsed_Remove() {
	minor := func(m int32) *int32 { return &m }
	// A GPU server: one GPU and a compute NIC with one VF under PCIe root pci0000:17,
	// and a storage NIC with two VFs under pci0000:ae.
	node := rdma.Node{Name: "n1", Devices: []rdma.DeviceInfo{
		{Type: rdma.GPU, Minor: minor(0), UUID: "GPU-0", Health: true, Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17"}},
		{Type: rdma.RDMA, Minor: minor(0), UUID: "0000:18:00.0", Health: true, Labels: map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{NodeID: 0, PCIEID: "pci0000:17", BusID: "0000:18:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:18:00.2"}}}}},
		{Type: rdma.RDMA, Minor: minor(1), UUID: "0000:af:00.0", Health: true, Labels: map[string]string{"rdma-type": "storage"},
			Topology: &rdma.DeviceTopology{NodeID: 1, PCIEID: "pci0000:ae", BusID: "0000:af:00.0"},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: []rdma.VirtualFunction{{Minor: 0, BusID: "0000:af:00.2"}, {Minor: 1, BusID: "0000:af:00.3"}}}}},
	}}
	inv, _ := rdma.NewInventory(node)
	used := new(rdma.Used)
	a, _ := rdma.Allocate(inv, used, rdma.Request{Count: 1, GPUs: 1})
	used.Add(a)
	share := rdma.Allocation{GPUs: []rdma.GPUAllocation{{Minor: 0}}} // a GPU plugin's pod
	used.Add(share)
	used.Remove(a)
	fmt.Println(used.VFs(), used.GPUs())
	used.Remove(share)
	fmt.Println(used.VFs(), used.GPUs())
	// Output:
	// [] [0]
	// [] []
}

func ExampleRequest_IsZero() {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	req, _ := rdma.RequestFromPod(pod, rdma.CountModel)
	fmt.Println(req.IsZero(), req.Validate())
	fmt.Println(rdma.Request{Count: -1}.Validate())
	// Output:
	// true <nil>
	// rdma: request: count -1 is negative
}

func ExampleNodeFromDevice() {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.koordinator.sh/v1alpha1",
		"kind":       "Device",
		"metadata":   map[string]any{"name": "n1"},
		"spec": map[string]any{"devices": []any{
			map[string]any{"type": "rdma", "id": "0000:18:00.0", "minor": int64(0), "health": true,
				"topology": map[string]any{"socketID": int64(0), "nodeID": int64(0), "pcieID": "pci0000:17"},
				"vfGroups": []any{map[string]any{"vfs": []any{map[string]any{"minor": int64(0), "busID": "0000:18:00.2"}}}}},
		}},
	}}
	node, err := rdma.NodeFromDevice(obj)
	if err != nil {
		panic(err)
	}
	inv, err := rdma.NewInventory(node)
	if err != nil {
		panic(err)
	}
	a, err := rdma.Allocate(inv, nil, rdma.Request{Count: 1})
	fmt.Println(inv.Name(), a.NICs[0].VFs[0].BDF, err)
	// Output: n1 0000:18:00.2 <nil>
}
