package rdma

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
)

// Allocated is a decoded device-allocated annotation: the RDMA entries typed, every
// other device type (gpu, fpga, …) kept as the exact JSON it came as.
type Allocated struct {
	// RDMA are the rdma entries in annotation order.
	RDMA []DeviceAllocation
	// Other holds the other device types' lists untouched, by type.
	Other map[DeviceType]json.RawMessage
}

func annotationError(name string, format string, args ...any) error {
	return fmt.Errorf("annotation %s: "+format, append([]any{name}, args...)...)
}

// DecodeAllocated parses the value of AnnotationDeviceAllocated. An empty value is an
// empty allocation. RDMA entries may carry the PF BDF in id (koordinator upstream), in
// busID (the design), in both (they must agree) or in neither (then the PF is known by
// minor only); every BDF must parse and every entry needs its minor (an entry that is
// null or has no minor is an error, never PF 0). Errors name the annotation and the field, e.g.
// `annotation scheduling.koordinator.sh/device-allocated: rdma[0].extension.vfs[1].busID: …`.
func DecodeAllocated(value string) (Allocated, error) {
	var a Allocated
	if value == "" {
		return a, nil
	}
	var raw map[DeviceType]json.RawMessage
	if err := json.Unmarshal([]byte(value), &raw); err != nil {
		return a, annotationError(AnnotationDeviceAllocated, "%v", err)
	}
	for t, msg := range raw {
		if t != RDMA {
			if a.Other == nil {
				a.Other = map[DeviceType]json.RawMessage{}
			}
			a.Other[t] = msg
			continue
		}
		if bytes.Equal(bytes.TrimSpace(msg), []byte("null")) {
			continue
		}
		var items []json.RawMessage
		if err := json.Unmarshal(msg, &items); err != nil {
			return Allocated{}, annotationError(AnnotationDeviceAllocated, "rdma: %v", err)
		}
		a.RDMA = make([]DeviceAllocation, len(items))
		for i, item := range items {
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(item, &keys); err != nil {
				return Allocated{}, annotationError(AnnotationDeviceAllocated, "rdma[%d]: %v", i, err)
			}
			if keys == nil {
				return Allocated{}, annotationError(AnnotationDeviceAllocated, "rdma[%d]: null, want an entry", i)
			}
			if m, ok := keys["minor"]; !ok || bytes.Equal(bytes.TrimSpace(m), []byte("null")) {
				return Allocated{}, annotationError(AnnotationDeviceAllocated, "rdma[%d].minor: required", i)
			}
			if err := json.Unmarshal(item, &a.RDMA[i]); err != nil {
				return Allocated{}, annotationError(AnnotationDeviceAllocated, "rdma[%d]: %v", i, err)
			}
		}
	}
	for i := range a.RDMA {
		if err := checkEntry(&a.RDMA[i]); err != nil {
			return Allocated{}, annotationError(AnnotationDeviceAllocated, "rdma[%d].%v", i, err)
		}
	}
	return a, nil
}

// checkEntry validates one rdma entry's addresses.
func checkEntry(d *DeviceAllocation) error {
	if looksLikeBDF(d.ID) { // upstream's id; a non-address id is left to busID or minor
		if _, err := ParseBDF(d.ID); err != nil {
			return fmt.Errorf("id: %v", err)
		}
	}
	if d.BusID != "" {
		b, err := ParseBDF(d.BusID)
		if err != nil {
			return fmt.Errorf("busID: %v", err)
		}
		if u, err := ParseBDF(d.ID); err == nil && u != b {
			return fmt.Errorf("id: %q is a PCI address other than busID %q", d.ID, d.BusID)
		}
	}
	if d.Extension != nil {
		for j, vf := range d.Extension.VirtualFunctions {
			if _, err := ParseBDF(vf.BusID); err != nil {
				return fmt.Errorf("extension.vfs[%d].busID: %v", j, err)
			}
		}
	}
	return nil
}

// looksLikeBDF reports whether s has a PCI address's shape (domain:bus:device.function
// separators in place), so a malformed address in it is an error, not another kind of id.
func looksLikeBDF(s string) bool {
	n := len(s)
	if n != 12 && n != 13 {
		return false
	}
	dl := n - 8
	return s[dl] == ':' && s[dl+3] == ':' && s[dl+6] == '.'
}

// EntryPF returns an rdma entry's PF address from busID, else id, and whether it has one.
func EntryPF(d DeviceAllocation) (BDF, bool) {
	if b, err := ParseBDF(d.BusID); err == nil {
		return b, true
	}
	if b, err := ParseBDF(d.ID); err == nil {
		return b, true
	}
	return BDF{}, false
}

// Encode renders the annotation value: a JSON object with sorted keys, the other types'
// JSON compacted but otherwise as decoded. It fails when the value alone would
// exceed the API server's limit on all of an object's annotations (256 KiB).
func (a Allocated) Encode() (string, error) {
	out := make(map[DeviceType]json.RawMessage, len(a.Other)+1)
	for t, m := range a.Other {
		out[t] = m
	}
	if len(a.RDMA) > 0 {
		b, err := json.Marshal(a.RDMA)
		if err != nil {
			return "", annotationError(AnnotationDeviceAllocated, "%v", err)
		}
		out[RDMA] = b
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", annotationError(AnnotationDeviceAllocated, "%v", err)
	}
	if len(b) > apivalidation.TotalAnnotationSizeLimitB {
		return "", annotationError(AnnotationDeviceAllocated, "%d bytes, above the %d byte limit", len(b), apivalidation.TotalAnnotationSizeLimitB)
	}
	return string(b), nil
}

// Entries turns an Allocation into annotation entries: one per PF in BDF order, with
// the PF BDF in both id and busID and VFs with minor -1. A whole PF counts 1 (100 in
// PercentModel) of koordinator.sh/rdma, a PF's VFs one each. model must be "",
// CountModel or PercentModel ([EncodeAllocated] checks it).
func Entries(a Allocation, model CapacityModel) []DeviceAllocation {
	out := make([]DeviceAllocation, 0, len(a.NICs))
	for _, n := range a.NICs {
		bdf := n.BDF.String()
		d := DeviceAllocation{Minor: n.Minor, ID: bdf, BusID: bdf}
		units := int64(len(n.VFs))
		if n.Whole {
			units = 1
			if model == PercentModel {
				units = percentPerDevice
			}
		} else {
			d.Extension = &DeviceAllocationExtension{}
			for _, v := range n.VFs {
				d.Extension.VirtualFunctions = append(d.Extension.VirtualFunctions, VirtualFunctionSpec{Minor: -1, BusID: v.BDF.String()})
			}
		}
		d.Resources = corev1.ResourceList{ResourceRDMA: *resource.NewQuantity(units, resource.DecimalSI)}
		out = append(out, d)
	}
	return out
}

// gpuEntries turns an Allocation's GPUs into gpu annotation entries, each a whole GPU
// (gpu-core and gpu-memory-ratio 100).
func gpuEntries(a Allocation) []DeviceAllocation {
	out := make([]DeviceAllocation, 0, len(a.GPUs))
	for _, g := range a.GPUs {
		out = append(out, DeviceAllocation{Minor: g.Minor, Resources: corev1.ResourceList{
			ResourceGPUCore:        *resource.NewQuantity(100, resource.DecimalSI),
			ResourceGPUMemoryRatio: *resource.NewQuantity(100, resource.DecimalSI),
		}})
	}
	return out
}

// EncodeAllocated writes a into the annotation value existing (which may be empty):
// the rdma list is replaced by Entries(a, model); every other type is kept as it was.
// A gpu list already in existing belongs to the GPU plugin that chose those GPUs
// (Request.WithGPUs), with its shares (gpu-core 50, gpu-memory), so it is kept
// untouched, and it is an error if it names other GPUs than a. Only when existing has
// no gpu list and a has GPUs (a joint request that chose them) is the list written:
// whole GPUs, gpu-core and gpu-memory-ratio 100 each. An unknown model is an error.
func EncodeAllocated(existing string, a Allocation, model CapacityModel) (string, error) {
	if err := model.validate(); err != nil {
		return "", err
	}
	cur, err := DecodeAllocated(existing)
	if err != nil {
		return "", err
	}
	cur.RDMA = Entries(a, model)
	if _, ok := cur.Other[GPU]; ok {
		have, err := cur.GPUMinors()
		if err != nil {
			return "", err
		}
		want := make([]int32, 0, len(a.GPUs))
		for _, g := range a.GPUs {
			want = append(want, g.Minor)
		}
		slices.Sort(have)
		slices.Sort(want)
		if len(want) > 0 && !slices.Equal(slices.Compact(have), slices.Compact(want)) {
			return "", annotationError(AnnotationDeviceAllocated, "gpu: the annotation holds GPUs %v, the allocation %v", have, want)
		}
		return cur.Encode()
	}
	if len(a.GPUs) > 0 {
		b, err := json.Marshal(gpuEntries(a))
		if err != nil {
			return "", annotationError(AnnotationDeviceAllocated, "%v", err)
		}
		if cur.Other == nil {
			cur.Other = map[DeviceType]json.RawMessage{}
		}
		cur.Other[GPU] = b
	}
	return cur.Encode()
}

// GPUMinors decodes the gpu list of the annotation (if any) and returns its minors.
func (a Allocated) GPUMinors() ([]int32, error) {
	msg, ok := a.Other[GPU]
	if !ok {
		return nil, nil
	}
	var list []struct {
		Minor *int32 `json:"minor"`
	}
	if err := json.Unmarshal(msg, &list); err != nil {
		return nil, annotationError(AnnotationDeviceAllocated, "gpu: %v", err)
	}
	out := make([]int32, 0, len(list))
	for i, g := range list {
		if g.Minor == nil {
			return nil, annotationError(AnnotationDeviceAllocated, "gpu[%d].minor: required", i)
		}
		out = append(out, *g.Minor)
	}
	return out, nil
}
