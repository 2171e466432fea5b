// Package copyused copies rdma.Used values by mistake and uses them as intended. A
// test of package rdma runs go vet on it and expects a report on exactly the lines
// that end in "copies".
package copyused

import "github.com/kplan-dev/kplan/rdma"

// Snapshot copies by assignment: the copy shares the original's holder counts.
func Snapshot(u *rdma.Used) int {
	c := *u // copies
	c.HoldGPU(1)
	return len(c.GPUs())
}

// ByValue takes a Used by value.
func ByValue(u rdma.Used) bool { return len(u.GPUs()) == 0 } // copies

// Keep stores a Used in a struct.
type Keep struct{ used rdma.Used }

// NewKeep copies into a composite literal.
func NewKeep(u *rdma.Used) Keep { return Keep{used: *u} } // copies

// Clone is the intended way to copy: an independent Used.
func Clone(u *rdma.Used) []int32 {
	c := u.Clone()
	c.HoldGPU(1)
	return c.GPUs()
}

// Fresh makes empty Used values in ways that copy nothing.
func Fresh() []*rdma.Used {
	var v rdma.Used
	v.HoldGPU(0)
	return []*rdma.Used{new(rdma.Used), &rdma.Used{}, &v}
}
