package rdma

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
)

// DRA attribute names DRADevices writes. The first three are Kubernetes' standard ones
// (resource.kubernetes.io/numaNode is defined from Kubernetes 1.37; older schedulers
// treat it as any other attribute).
const (
	DRAAttributePCIeRoot resourcev1.QualifiedName = "resource.kubernetes.io/pcieRoot"
	DRAAttributeNUMANode resourcev1.QualifiedName = "resource.kubernetes.io/numaNode" // an int, only when known
	DRAAttributePCIBusID resourcev1.QualifiedName = "resource.kubernetes.io/pciBusID"
	DRAAttributeKind     resourcev1.QualifiedName = "rdma.kplan.dev/kind" // "gpu", "pf" or "vf"
	DRAAttributePF       resourcev1.QualifiedName = "rdma.kplan.dev/pf"   // a VF's PF BDF
	DRAAttributeMinor    resourcev1.QualifiedName = "rdma.kplan.dev/minor"
	// DRALabelDomain prefixes device (and VF group) labels: rdma-type=storage becomes
	// label.rdma.kplan.dev/rdma_type = "storage".
	DRALabelDomain = "label.rdma.kplan.dev"
)

// maxDRAIDLength is DRA's limit on the identifier part of an attribute name.
const maxDRAIDLength = 32

// DRADevices describes the node's healthy devices as DRA (resource.k8s.io/v1) devices
// for a ResourceSlice, so the same inventory can be allocated by the DRA scheduler:
// GPUs "gpu-<minor>", PFs "pf-<bdf>" and VFs "vf-<bdf>" (BDF with ':' and '.' as '-').
// SamePCIe is then a matchAttribute constraint on DRAAttributePCIeRoot, a RailLabel a
// distinctAttribute on the label's attribute, Device scope a matchAttribute on
// DRAAttributePF. An unknown NUMA node or PCIe root is left out, never written as 0 or
// "". Label keys with a prefix ("a.b/c") are left out; other keys become identifiers
// (characters other than letters, digits and '_' turn into '_'; at most 32; when two
// keys map to one identifier the PF's label, then the first key in order, wins).
// A nil inventory has no devices. Devices come in order: GPUs by minor, then each PF followed by its VFs, by BDF.
func DRADevices(inv *Inventory) []resourcev1.Device {
	if inv == nil {
		return nil
	}
	var out []resourcev1.Device
	for i := range inv.gpus {
		g := &inv.gpus[i]
		if !g.healthy {
			continue
		}
		d := draDevice("gpu-"+strconv.Itoa(int(g.minor)), "gpu", g.root, g.numa, int64(g.minor), g.labels)
		out = append(out, d)
	}
	for i := range inv.pfs {
		pf := &inv.pfs[i]
		if !pf.healthy {
			continue
		}
		d := draDevice("pf-"+draName(pf.bdf), "pf", pf.root, pf.numa, int64(pf.minor), pf.labels)
		d.Attributes[DRAAttributePCIBusID] = str(pf.bdf.String())
		out = append(out, d)
		for _, v := range pf.vfs {
			d := draDevice("vf-"+draName(v.bdf), "vf", pf.root, pf.numa, int64(v.minor), pf.labels)
			d.Attributes[DRAAttributePCIBusID] = str(v.bdf.String())
			d.Attributes[DRAAttributePF] = str(pf.bdf.String())
			addLabels(d.Attributes, v.labels)
			out = append(out, d)
		}
	}
	return out
}

func draDevice(name, kind, root string, numa int32, minor int64, labels map[string]string) resourcev1.Device {
	d := resourcev1.Device{Name: name, Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		DRAAttributeKind:  str(kind),
		DRAAttributeMinor: {IntValue: &minor},
	}}
	if root != "" {
		d.Attributes[DRAAttributePCIeRoot] = str(root)
	}
	if numa != UnknownNUMANode {
		n := int64(numa)
		d.Attributes[DRAAttributeNUMANode] = resourcev1.DeviceAttribute{IntValue: &n}
	}
	addLabels(d.Attributes, labels)
	return d
}

func addLabels(attrs map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, labels map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		if strings.Contains(k, "/") {
			continue
		}
		id := []byte(k)
		for i, c := range id {
			if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				id[i] = '_'
			}
		}
		if len(id) > maxDRAIDLength {
			id = id[:maxDRAIDLength]
		}
		if id[0] >= '0' && id[0] <= '9' {
			id[0] = '_'
		}
		name := resourcev1.QualifiedName(DRALabelDomain + "/" + string(id))
		if _, taken := attrs[name]; !taken { // first key in sorted order wins
			attrs[name] = str(v)
		}
	}
}

func str(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: &s} }

func draName(b BDF) string {
	return strings.NewReplacer(":", "-", ".", "-").Replace(b.String())
}
