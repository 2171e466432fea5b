package rdma

import (
	"maps"
	"slices"
)

// Used is what other pods already hold on a node: PFs held whole, VFs, PFs and PCIe
// roots held exclusively, and GPUs. The zero value holds nothing. Allocate reads it and
// never changes it; Add and the Hold methods change the receiver.
type Used struct {
	pfs  map[BDF]struct{}
	vfs  map[BDF]struct{}
	exPF map[BDF]struct{}
	exRt map[string]struct{}
	gpus map[int32]struct{}
}

func put[K comparable](m *map[K]struct{}, k K) {
	if *m == nil {
		*m = map[K]struct{}{}
	}
	(*m)[k] = struct{}{}
}

// HoldPF records a PF held whole.
func (u *Used) HoldPF(b BDF) { put(&u.pfs, b) }

// HoldVF records a VF in use.
func (u *Used) HoldVF(b BDF) { put(&u.vfs, b) }

// HoldPFExclusive records a PF no other pod may use (exclusivePolicy DeviceLevel).
func (u *Used) HoldPFExclusive(b BDF) { put(&u.exPF, b) }

// HoldRootExclusive records a PCIe root whose NICs no other pod may use
// (exclusivePolicy PCIeLevel).
func (u *Used) HoldRootExclusive(root string) { put(&u.exRt, root) }

// HoldGPU records a GPU (by minor) in use.
func (u *Used) HoldGPU(minor int32) { put(&u.gpus, minor) }

// Add records everything a holds, including its exclusivity.
func (u *Used) Add(a Allocation) {
	for _, n := range a.NICs {
		if n.Whole {
			u.HoldPF(n.BDF)
		}
		for _, v := range n.VFs {
			u.HoldVF(v.BDF)
		}
	}
	for _, b := range a.ExclusivePFs {
		u.HoldPFExclusive(b)
	}
	for _, r := range a.ExclusiveRoots {
		u.HoldRootExclusive(r)
	}
	for _, g := range a.GPUs {
		u.HoldGPU(g.Minor)
	}
}

// Clone returns an independent copy.
func (u Used) Clone() Used {
	return Used{pfs: maps.Clone(u.pfs), vfs: maps.Clone(u.vfs), exPF: maps.Clone(u.exPF), exRt: maps.Clone(u.exRt), gpus: maps.Clone(u.gpus)}
}

// PFs lists the PFs held whole, in BDF order.
func (u Used) PFs() []BDF { return sortedBDFs(u.pfs) }

// VFs lists the VFs in use, in BDF order.
func (u Used) VFs() []BDF { return sortedBDFs(u.vfs) }

// ExclusivePFs lists the PFs held exclusively, in BDF order.
func (u Used) ExclusivePFs() []BDF { return sortedBDFs(u.exPF) }

// ExclusiveRoots lists the PCIe roots held exclusively, sorted.
func (u Used) ExclusiveRoots() []string { return slices.Sorted(maps.Keys(u.exRt)) }

// GPUs lists the GPU minors in use, sorted.
func (u Used) GPUs() []int32 { return slices.Sorted(maps.Keys(u.gpus)) }

func sortedBDFs(m map[BDF]struct{}) []BDF {
	out := slices.Collect(maps.Keys(m))
	slices.SortFunc(out, BDF.Compare)
	return out
}

func has[K comparable](m map[K]struct{}, k K) bool {
	_, ok := m[k]
	return ok
}
