package rdma

import (
	"maps"
	"slices"
)

// Used is what pods already hold on a node: PFs held whole, VFs, PFs and PCIe roots
// held exclusively, and GPUs. Allocate reads it and never changes it; Add, Remove and
// the Hold methods change it.
//
// Work with a Used through a pointer only: UsedByPods and Clone return one, new(Used)
// is an empty one, and Allocate, Fits and Score take one (nil holds nothing). Copying
// a Used by value would give two values sharing one state, so a Used carries a guard
// that makes go vet report every copy (as it does for sync.Mutex); Clone makes an
// independent copy, e.g. to try a pod on a snapshot. The reading methods treat a nil
// *Used as holding nothing; the methods that change it need a non-nil one.
//
// Used counts holders: a device recorded twice (two pods sharing a GPU, or two pods'
// annotations naming one VF) stays held until both are removed. So a scheduler plugin
// can keep one Used per node across scheduling cycles, Add an allocation at Reserve
// and Remove it at Unreserve or when the pod is deleted, and get back exactly the
// state it had before the Add.
//
// Allocate, Fits, Score and the reading methods never change a Used, so any number of
// them may read one Used at once; Add, Remove and the Hold methods need the caller's
// lock when other goroutines use the same Used.
type Used struct {
	_    noCopy
	pfs  map[BDF]int
	vfs  map[BDF]int
	exPF map[BDF]int
	exRt map[string]int
	gpus map[int32]int
}

// noCopy makes go vet's copylocks check report a Used copied by value: the check
// flags any struct holding a type with Lock and Unlock methods.
type noCopy struct{}

// Lock is a no-op; it exists for go vet.
func (*noCopy) Lock() {}

// Unlock is a no-op; it exists for go vet.
func (*noCopy) Unlock() {}

func put[K comparable](m *map[K]int, k K) {
	if *m == nil {
		*m = map[K]int{}
	}
	(*m)[k]++
}

func drop[K comparable](m map[K]int, k K) {
	switch n := m[k]; {
	case n > 1:
		m[k] = n - 1
	case n == 1:
		delete(m, k)
	}
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

// Add records everything a holds, including its exclusivity, as one more holder of
// each device.
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

// Remove releases what Add(a) recorded: one holder less of each device a names. A
// device another allocation also holds stays held. Remove(a) after Add(a) leaves u as
// it was before the Add. Devices u does not hold are ignored, so removing an
// allocation that was never added (or removing it twice) releases other holders'
// devices: remove only what was added.
func (u *Used) Remove(a Allocation) {
	for _, n := range a.NICs {
		if n.Whole {
			drop(u.pfs, n.BDF)
		}
		for _, v := range n.VFs {
			drop(u.vfs, v.BDF)
		}
	}
	for _, b := range a.ExclusivePFs {
		drop(u.exPF, b)
	}
	for _, r := range a.ExclusiveRoots {
		drop(u.exRt, r)
	}
	for _, g := range a.GPUs {
		drop(u.gpus, g.Minor)
	}
}

// Clone returns an independent copy: changing either afterwards does not change the
// other. The clone of nil is an empty Used.
func (u *Used) Clone() *Used {
	if u == nil {
		return new(Used)
	}
	return &Used{pfs: maps.Clone(u.pfs), vfs: maps.Clone(u.vfs), exPF: maps.Clone(u.exPF), exRt: maps.Clone(u.exRt), gpus: maps.Clone(u.gpus)}
}

// PFs lists the PFs held whole, in BDF order, each once.
func (u *Used) PFs() []BDF {
	if u == nil {
		return nil
	}
	return sortedBDFs(u.pfs)
}

// VFs lists the VFs in use, in BDF order, each once.
func (u *Used) VFs() []BDF {
	if u == nil {
		return nil
	}
	return sortedBDFs(u.vfs)
}

// ExclusivePFs lists the PFs held exclusively, in BDF order, each once.
func (u *Used) ExclusivePFs() []BDF {
	if u == nil {
		return nil
	}
	return sortedBDFs(u.exPF)
}

// ExclusiveRoots lists the PCIe roots held exclusively, sorted, each once.
func (u *Used) ExclusiveRoots() []string {
	if u == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(u.exRt))
}

// GPUs lists the GPU minors in use, sorted, each once.
func (u *Used) GPUs() []int32 {
	if u == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(u.gpus))
}

// IsEmpty reports whether u holds nothing; a nil u holds nothing.
func (u *Used) IsEmpty() bool {
	return u == nil || len(u.pfs)+len(u.vfs)+len(u.exPF)+len(u.exRt)+len(u.gpus) == 0
}

func sortedBDFs(m map[BDF]int) []BDF {
	out := slices.Collect(maps.Keys(m))
	slices.SortFunc(out, BDF.Compare)
	return out
}

func has[K comparable](m map[K]int, k K) bool {
	return m[k] > 0
}
