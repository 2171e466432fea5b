package rdma

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DeviceIDs returns the PCI addresses a CNI (Multus deviceID) or runtime hook passes into
// the container: each entry's VF BDFs, else its PF BDF (busID, else id), normalised to
// lower case and in numeric BDF order. An entry with neither is an error.
func DeviceIDs(entries []DeviceAllocation) ([]string, error) {
	var bdfs []BDF
	for i, d := range entries {
		if d.Extension != nil && len(d.Extension.VirtualFunctions) > 0 {
			for j, v := range d.Extension.VirtualFunctions {
				b, err := ParseBDF(v.BusID)
				if err != nil {
					return nil, fmt.Errorf("rdma[%d].extension.vfs[%d].busID: %v", i, j, err)
				}
				bdfs = append(bdfs, b)
			}
			continue
		}
		b, ok := EntryPF(d)
		if !ok {
			return nil, fmt.Errorf("rdma[%d]: no PF BDF in busID or id (minor %d)", i, d.Minor)
		}
		bdfs = append(bdfs, b)
	}
	slices.SortFunc(bdfs, BDF.Compare)
	bdfs = slices.Compact(bdfs)
	out := make([]string, len(bdfs))
	for i, b := range bdfs {
		out[i] = b.String()
	}
	return out, nil
}

// DeviceIDsFromPod decodes the pod's device-allocated annotation and returns
// DeviceIDs of its rdma entries (none when the pod has no annotation).
func DeviceIDsFromPod(pod *corev1.Pod) ([]string, error) {
	a, err := DecodeAllocated(pod.Annotations[AnnotationDeviceAllocated])
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", PodName(pod), err)
	}
	ids, err := DeviceIDs(a.RDMA)
	if err != nil {
		return nil, fmt.Errorf("pod %s: annotation %s: %w", PodName(pod), AnnotationDeviceAllocated, err)
	}
	return ids, nil
}

// PCIDeviceEnv is the SR-IOV device plugin's environment variable for a resource:
// PCIDEVICE_<RESOURCE> with every character other than A-Z and 0-9 turned into '_'
// (so "intel.com/sriov_net" gives PCIDEVICE_INTEL_COM_SRIOV_NET), and the ids joined by
// commas.
func PCIDeviceEnv(resourceName string, ids []string) corev1.EnvVar {
	var b strings.Builder
	b.WriteString("PCIDEVICE_")
	for _, r := range strings.ToUpper(resourceName) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return corev1.EnvVar{Name: b.String(), Value: strings.Join(ids, ",")}
}
