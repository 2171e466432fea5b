package rdma

import (
	"cmp"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Inventory is a validated, indexed node inventory. Build it once per Device object
// with NewInventory and share it: nothing changes it afterwards, so it is safe for
// concurrent use by any number of Allocate, Fits and Score calls.
type Inventory struct {
	name  string
	pfs   []pfInfo  // RDMA PFs sorted by BDF
	gpus  []gpuInfo // GPUs sorted by minor
	roots []string  // distinct non-empty PCIe roots of PFs and GPUs, sorted
	byBDF map[BDF]int32
	vfAt  map[BDF]vfRef
	gpuAt map[int32]int
	mode  nicMode // modePF, modeVF, or modeMixed
	errs  field.ErrorList
}

type pfInfo struct {
	minor   int32
	id      string
	bdf     BDF
	root    string
	numa    int32
	healthy bool
	labels  map[string]string
	vfs     []vfInfo // sorted by BDF
}

type vfInfo struct {
	minor  int32
	bdf    BDF
	labels map[string]string // the VF group's labels
}

type vfRef struct{ pf, vf int32 }

type gpuInfo struct {
	minor   int32
	id      string
	root    string
	numa    int32
	healthy bool
	labels  map[string]string
}

// NewInventory validates n (see ValidateNode) and indexes it. The error is an *Error
// with ReasonInvalidInventory that names the node and every invalid field. One problem does not reject the node: a VF whose busID is
// not a PCI address is left out (its PF and the other VFs stay usable) and reported by
// Errors. n is not mutated and not retained except for its label maps, which must not
// be changed afterwards.
func NewInventory(n Node) (*Inventory, error) {
	var skipped field.ErrorList
	if errs := ValidateNode(n); len(errs) > 0 {
		var fatal field.ErrorList
		for _, e := range errs {
			if e.Type == field.ErrorTypeInvalid && vfBusIDPath.MatchString(e.Field) {
				skipped = append(skipped, e)
			} else {
				fatal = append(fatal, e)
			}
		}
		if len(fatal) > 0 {
			return nil, newError(ReasonInvalidInventory, "node %s: %v", n.Name, errs.ToAggregate())
		}
	}
	inv := &Inventory{name: n.Name, byBDF: map[BDF]int32{}, vfAt: map[BDF]vfRef{}, gpuAt: map[int32]int{}, errs: skipped}
	rootSet := map[string]bool{}
	for i := range n.Devices {
		d := &n.Devices[i]
		root, numa := "", int32(UnknownNUMANode)
		if d.Topology != nil {
			root, numa = d.Topology.PCIEID, d.Topology.NodeID
		}
		if root != "" {
			rootSet[root] = true
		}
		switch d.Type {
		case RDMA:
			b, _, _ := pfBDF(d, nil)
			p := pfInfo{minor: *d.Minor, id: d.UUID, bdf: b, root: root, numa: numa, healthy: d.Health, labels: d.Labels}
			for _, g := range d.VFGroups {
				for _, vf := range g.VFs {
					vb, err := ParseBDF(vf.BusID)
					if err != nil {
						continue // reported in inv.errs
					}
					p.vfs = append(p.vfs, vfInfo{minor: vf.Minor, bdf: vb, labels: g.Labels})
				}
			}
			slices.SortFunc(p.vfs, func(a, b vfInfo) int { return a.bdf.Compare(b.bdf) })
			inv.pfs = append(inv.pfs, p)
		case GPU:
			inv.gpus = append(inv.gpus, gpuInfo{minor: *d.Minor, id: d.UUID, root: root, numa: numa, healthy: d.Health, labels: d.Labels})
		}
	}
	slices.SortFunc(inv.pfs, func(a, b pfInfo) int { return a.bdf.Compare(b.bdf) })
	slices.SortFunc(inv.gpus, func(a, b gpuInfo) int { return cmp.Compare(a.minor, b.minor) })
	withVF, withoutVF := 0, 0
	for i := range inv.pfs {
		p := &inv.pfs[i]
		inv.byBDF[p.bdf] = int32(i)
		for j := range p.vfs {
			inv.vfAt[p.vfs[j].bdf] = vfRef{int32(i), int32(j)}
		}
		switch {
		case !p.healthy: // unhealthy devices do not count, for the mode either
		case len(p.vfs) > 0:
			withVF++
		default:
			withoutVF++
		}
	}
	for i := range inv.gpus {
		inv.gpuAt[inv.gpus[i].minor] = i
	}
	switch {
	case withVF > 0 && withoutVF > 0:
		inv.mode = modeMixed
	case withVF > 0:
		inv.mode = modeVF
	default:
		inv.mode = modePF
	}
	for r := range rootSet {
		inv.roots = append(inv.roots, r)
	}
	slices.Sort(inv.roots)
	return inv, nil
}

// vfBusIDPath is the field path of a VF's address in a Node.
var vfBusIDPath = regexp.MustCompile(`^devices\[\d+\]\.vfGroups\[\d+\]\.vfs\[\d+\]\.busID$`)

// Errors lists the problems NewInventory tolerated, each naming the field: VFs left out
// because their busID is not a PCI address. Nil when there were none. A controller can
// report them (e.g. as an event or a condition on the Device object).
func (inv *Inventory) Errors() field.ErrorList { return slices.Clone(inv.errs) }

// Name is the node's name.
func (inv *Inventory) Name() string { return inv.name }

// modeOrError is modeVF when every healthy PF has VFs, modePF when none has (or no PF is
// healthy), and an error when the node mixes both (the design requires one mode per
// node). Unhealthy PFs do not count: a failed NIC that lost its VFs does not make a
// VF-mode node mixed.
func (inv *Inventory) modeOrError() (nicMode, *Error) {
	if inv.mode == modeMixed {
		return modeMixed, newError(ReasonMixedNICModes, "node %s: rdma: healthy PFs with and without VFs on one node; a node's NICs must all be in PF or all in VF mode", inv.name)
	}
	return inv.mode, nil
}

// pfIndex resolves a PF by BDF.
func (inv *Inventory) pfIndex(b BDF) (int, bool) {
	i, ok := inv.byBDF[b]
	return int(i), ok
}

// pfByMinor resolves a PF by minor (for annotations without a BDF).
func (inv *Inventory) pfByMinor(m int32) (int, bool) {
	for i := range inv.pfs {
		if inv.pfs[i].minor == m {
			return i, true
		}
	}
	return 0, false
}
