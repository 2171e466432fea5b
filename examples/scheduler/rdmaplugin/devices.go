package rdmaplugin

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/kplan-dev/kplan/rdma"
)

// nodeDevices is one node's inventory, or why it could not be built.
type nodeDevices struct {
	inv *rdma.Inventory
	err error // an *rdma.Error
	// gpus are the GPU minors of the Device object, bdfs the PCI addresses of its
	// GPUs, PFs and VFs (what a ResourceSlice publishing the same devices would
	// name); both sorted.
	gpus []int32
	bdfs []rdma.BDF
	// version is the Device object's resourceVersion: an older object is not applied
	// over a newer one.
	version string
	// problems is what was reported about this Device object (its fatal error or the
	// VFs left out), so that each change is reported once.
	problems string
}

// setDevice records the inventory of a Device object (named like its node) and
// assesses again the pods on the node whose holdings are not recorded yet. It returns
// what to report: the object's problems when they changed, and the pods' (see
// setPod). An object no newer than the one recorded (by resourceVersion) is ignored.
func (c *cluster) setDevice(obj *unstructured.Unstructured) []notice {
	name, version := obj.GetName(), obj.GetResourceVersion()
	stale := func(prev nodeDevices) bool {
		return olderVersion(version, prev.version) || (version != "" && version == prev.version)
	}
	c.mu.RLock()
	prev, had := c.devices[name]
	c.mu.RUnlock()
	if had && stale(prev) {
		return nil // seen already
	}
	d := buildDevices(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, had = c.devices[name]
	if had && stale(prev) {
		return nil
	}
	d.problems = deviceProblems(d)
	c.devices[name] = d
	c.invalidate(name)
	var out []notice
	if d.problems != prev.problems { // prev is the zero value when !had
		out = append(out, deviceNotice(obj, d))
	}
	for _, uid := range sortedUIDs(c.pods[name]) {
		if h := c.pods[name][uid]; !h.recorded {
			out = append(out, c.assessLocked(name, h)...)
		}
	}
	return out
}

// buildDevices is the inventory of a Device object, or why there is none.
func buildDevices(obj *unstructured.Unstructured) nodeDevices {
	d := nodeDevices{version: obj.GetResourceVersion()}
	n, err := rdma.NodeFromDevice(obj)
	if err == nil {
		d.inv, err = rdma.NewInventory(n)
	}
	if err != nil {
		return nodeDevices{version: d.version, err: err} // an *rdma.Error naming the Device object or node
	}
	for _, dev := range n.Devices {
		if dev.Type == rdma.GPU && dev.Minor != nil {
			d.gpus = append(d.gpus, *dev.Minor)
		}
		if dev.Topology != nil {
			if b, err := rdma.ParseBDF(dev.Topology.BusID); err == nil {
				d.bdfs = append(d.bdfs, b)
			}
		}
		if b, err := rdma.ParseBDF(dev.UUID); err == nil && dev.Type == rdma.RDMA {
			d.bdfs = append(d.bdfs, b)
		}
		for _, g := range dev.VFGroups {
			for _, vf := range g.VFs {
				if b, err := rdma.ParseBDF(vf.BusID); err == nil {
					d.bdfs = append(d.bdfs, b)
				}
			}
		}
	}
	slices.Sort(d.gpus)
	slices.SortFunc(d.bdfs, rdma.BDF.Compare)
	d.bdfs = slices.Compact(d.bdfs)
	return d
}

// hasGPU reports whether the Device object lists a GPU of that minor.
func (d nodeDevices) hasGPU(minor int32) bool {
	_, ok := slices.BinarySearch(d.gpus, minor)
	return ok
}

// hasBDF reports whether the Device object lists a device at that PCI address.
func (d nodeDevices) hasBDF(b rdma.BDF) bool {
	_, ok := slices.BinarySearchFunc(d.bdfs, b, rdma.BDF.Compare)
	return ok
}

// olderVersion reports whether resourceVersion a is older than b; false when either
// is not comparable.
func olderVersion(a, b string) bool {
	n, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && n < 0
}

// deleteDevice forgets a node's inventory.
func (c *cluster) deleteDevice(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.devices, name)
	c.invalidate(name)
}
