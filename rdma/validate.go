package rdma

import (
	"fmt"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateNode checks a node's inventory. Errors name the field, e.g.
// devices[2].vfGroups[0].vfs[3].busID. It checks: a known type; a minor present,
// not negative and unique per type; RDMA PFs with a BDF (topology.busID, else id) that
// parses and agrees with the other when both are BDFs; VF BDFs that parse; no BDF used
// twice; NUMA node -1 or above; VF groups only on RDMA devices; valid label keys and
// values.
func ValidateNode(n Node) field.ErrorList {
	var errs field.ErrorList
	root := field.NewPath("devices")
	minors := map[DeviceType]map[int32]int{}
	bdfs := map[BDF]string{}
	seen := func(b BDF, p *field.Path) {
		if prev, ok := bdfs[b]; ok {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s (also %s)", b, prev)))
			return
		}
		bdfs[b] = p.String()
	}
	for i := range n.Devices {
		d := &n.Devices[i]
		p := root.Index(i)
		switch d.Type {
		case GPU, RDMA, FPGA:
		default:
			errs = append(errs, field.NotSupported(p.Child("type"), d.Type, []string{string(GPU), string(RDMA), string(FPGA)}))
		}
		if d.Minor == nil {
			errs = append(errs, field.Required(p.Child("minor"), ""))
		} else if *d.Minor < 0 {
			errs = append(errs, field.Invalid(p.Child("minor"), *d.Minor, "must not be negative"))
		} else {
			if minors[d.Type] == nil {
				minors[d.Type] = map[int32]int{}
			}
			if j, ok := minors[d.Type][*d.Minor]; ok {
				errs = append(errs, field.Duplicate(p.Child("minor"), fmt.Sprintf("%d (also devices[%d])", *d.Minor, j)))
			} else {
				minors[d.Type][*d.Minor] = i
			}
		}
		if d.Topology != nil && d.Topology.NodeID < UnknownNUMANode {
			errs = append(errs, field.Invalid(p.Child("topology", "nodeID"), d.Topology.NodeID, "must be -1 (unknown) or a NUMA node"))
		}
		errs = append(errs, metav1validation.ValidateLabels(d.Labels, p.Child("labels"))...)
		if d.Type != RDMA {
			if len(d.VFGroups) > 0 {
				errs = append(errs, field.Forbidden(p.Child("vfGroups"), "only rdma devices have VFs"))
			}
			continue
		}
		if b, bp, err := pfBDF(d, p); err != nil {
			errs = append(errs, err)
		} else {
			seen(b, bp)
		}
		for g := range d.VFGroups {
			gp := p.Child("vfGroups").Index(g)
			errs = append(errs, metav1validation.ValidateLabels(d.VFGroups[g].Labels, gp.Child("labels"))...)
			for v, vf := range d.VFGroups[g].VFs {
				vp := gp.Child("vfs").Index(v).Child("busID")
				b, err := ParseBDF(vf.BusID)
				if err != nil {
					errs = append(errs, field.Invalid(vp, vf.BusID, err.Error()))
					continue
				}
				seen(b, vp)
			}
		}
	}
	return errs
}

// pfBDF returns an RDMA device's PF address: topology.busID, else id. When both parse
// they must agree.
func pfBDF(d *DeviceInfo, p *field.Path) (BDF, *field.Path, *field.Error) {
	var bus string
	if d.Topology != nil {
		bus = d.Topology.BusID
	}
	if bus != "" {
		b, err := ParseBDF(bus)
		if err != nil {
			return BDF{}, nil, field.Invalid(p.Child("topology", "busID"), bus, err.Error())
		}
		if d.UUID != "" {
			if u, err := ParseBDF(d.UUID); err == nil && u != b {
				return BDF{}, nil, field.Invalid(p.Child("id"), d.UUID, fmt.Sprintf("is a PCI address other than topology.busID %s", b))
			}
		}
		return b, p.Child("topology", "busID"), nil
	}
	b, err := ParseBDF(d.UUID)
	if err != nil {
		if d.UUID == "" {
			return BDF{}, nil, field.Required(p.Child("topology", "busID"), "an rdma device needs its PF BDF in topology.busID or id")
		}
		return BDF{}, nil, field.Invalid(p.Child("id"), d.UUID, "no topology.busID, and "+err.Error())
	}
	return b, p.Child("id"), nil
}
