package rdma

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// nicMode is how a node's NICs are exposed.
type nicMode int

// Modes of a node.
const (
	// modePF: no PF has VFs; PFs are allocated whole.
	modePF nicMode = iota
	// modeVF: every PF has SR-IOV VFs; VFs are allocated.
	modeVF
	modeMixed
)

// String returns "PF", "VF" or "mixed".
func (m nicMode) String() string {
	switch m {
	case modePF:
		return "PF"
	case modeVF:
		return "VF"
	}
	return "mixed"
}

// CapacityModel chooses how koordinator.sh/rdma is counted in node status. The
// empty CapacityModel is CountModel.
type CapacityModel string

// Capacity models.
const (
	// CountModel is the design's rule: the number of VFs when the node's NICs are in
	// VF mode, else the number of PFs. A node mixing modes is an error.
	CountModel CapacityModel = "Count"
	// PercentModel is koordinator upstream's: 100 per healthy PF, whatever the mode.
	PercentModel CapacityModel = "Percent"
)

// percentPerDevice is what one PF counts for in PercentModel.
const percentPerDevice = 100

// Capacity is the node's koordinator.sh/rdma capacity under model. Unhealthy PFs (and
// their VFs) do not count. The result has the single key ResourceRDMA. The error is an
// *Error: ReasonMixedNICModes for a node mixing modes under CountModel,
// ReasonInvalidOptions for an unknown model, ReasonInvalidInventory for a nil
// inventory.
func Capacity(inv *Inventory, model CapacityModel) (corev1.ResourceList, error) {
	if inv == nil {
		return nil, newError(ReasonInvalidInventory, "rdma: capacity: nil inventory")
	}
	var n int64
	switch model {
	case CountModel, "":
		mode, err := inv.modeOrError()
		if err != nil {
			return nil, err
		}
		for i := range inv.pfs {
			p := &inv.pfs[i]
			if !p.healthy {
				continue
			}
			if mode == modeVF {
				n += int64(len(p.vfs))
			} else {
				n++
			}
		}
	case PercentModel:
		for i := range inv.pfs {
			if inv.pfs[i].healthy {
				n += percentPerDevice
			}
		}
	default:
		return nil, newError(ReasonInvalidOptions, "rdma: %v", model.validate())
	}
	return corev1.ResourceList{ResourceRDMA: *resource.NewQuantity(n, resource.DecimalSI)}, nil
}

// validate reports an error for a model that is none of "", CountModel and
// PercentModel.
func (m CapacityModel) validate() error {
	switch m {
	case "", CountModel, PercentModel:
		return nil
	}
	return fmt.Errorf("capacity model %q is not Count or Percent", string(m))
}
