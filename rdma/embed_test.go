package rdma

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
)

// sameUsed compares two Used by their holder counts (nil and empty maps alike).
func sameUsed(a, b Used) bool {
	return maps.Equal(a.pfs, b.pfs) && maps.Equal(a.vfs, b.vfs) && maps.Equal(a.exPF, b.exPF) &&
		maps.Equal(a.exRt, b.exRt) && maps.Equal(a.gpus, b.gpus)
}

// errorKind names the one sentinel err wraps, or fails.
func errorKind(t interface {
	Helper()
	Fatalf(string, ...any)
}, err error) error {
	t.Helper()
	ins, uns := errors.Is(err, ErrInsufficient), errors.Is(err, ErrUnsatisfiable)
	switch {
	case ins && !uns:
		return ErrInsufficient
	case uns && !ins:
		return ErrUnsatisfiable
	}
	t.Fatalf("error %q wraps ErrInsufficient=%v ErrUnsatisfiable=%v, want exactly one", err, ins, uns)
	return nil
}

func TestAllocateErrorsSayWhetherFreeingDevicesHelps(t *testing.T) {
	inv := twoRootNode(t) // 3 PFs x 4 VFs, roots pci0000:3a (2 PFs) and pci0000:ae
	allVFs := func() Used {
		var u Used
		for _, pf := range inv.pfs {
			for _, v := range pf.vfs {
				u.HoldVF(v.bdf)
			}
		}
		return u
	}
	usedVF := func(b string) Used {
		var u Used
		u.HoldVF(mustBDF(b))
		return u
	}
	oneVF := func() Used { return usedVF("0000:af:00.2") }
	for _, tc := range []struct {
		name string
		inv  *Inventory
		used Used
		req  Request
		want error
		text string
	}{
		{"every VF is held by other pods", inv, allVFs(), Request{Count: 1}, ErrInsufficient, "need 1 VF, 0 free"},
		{"more VFs than the node has", inv, Used{}, Request{Count: 13}, ErrUnsatisfiable, "need 13 VFs, 12 free"},
		{"more VFs than the node has, some held", inv, oneVF(), Request{Count: 13}, ErrUnsatisfiable, "need 13 VFs, 11 free"},
		{"a designated VF held by another pod", inv, oneVF(), Request{DesignatedVFs: []BDF{mustBDF("0000:af:00.2")}}, ErrInsufficient, "is in use"},
		{"a designated VF not on the node", inv, Used{}, Request{DesignatedVFs: []BDF{mustBDF("0000:01:00.2")}}, ErrUnsatisfiable, "is not on the node"},
		{"a selector no PF matches", inv, oneVF(), Request{Count: 1, Selector: sel("rdma-type", "storage")}, ErrUnsatisfiable, "none on the node"},
		{"a PCIe root shared with another pod, exclusive request", inv, usedVF("0000:3b:00.2"), Request{Count: 5, Exclusive: ExclusivePCIe}, ErrInsufficient, "shared with other pods"},
		{"an invalid request", inv, Used{}, Request{Count: -1}, ErrUnsatisfiable, "count -1 is negative"},
		{"whole PFs on a VF-mode node with all VFs held", inv, allVFs(), Request{Kind: WholePF, Count: 1}, ErrInsufficient, "has VFs in use"},
		{"a nil inventory", nil, Used{}, Request{Count: 1}, ErrUnsatisfiable, "nil inventory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Allocate(tc.inv, tc.used, tc.req)
			if err == nil {
				t.Fatal("Allocate succeeded")
			}
			if got := errorKind(t, err); got != tc.want {
				t.Fatalf("error %q wraps %v, want %v", err, got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) || strings.Contains(err.Error(), "never satisfy") || strings.Contains(err.Error(), "free devices now") {
				t.Fatalf("error %q: want the descriptive text with %q and no sentinel text", err, tc.text)
			}
			if ferr := Fits(tc.inv, tc.used, tc.req); !errors.Is(ferr, tc.want) || ferr.Error() != err.Error() {
				t.Fatalf("Fits gives %v, Allocate %v", ferr, err)
			}
			if _, serr := Score(tc.inv, tc.used, tc.req, ScoreOptions{}); !errors.Is(serr, tc.want) {
				t.Fatalf("Score gives %v, want %v", serr, tc.want)
			}
			if _, serr := Score(twoRootNode(t), Used{}, Request{Count: 1}, ScoreOptions{TopologyWeight: 101}); errorKind(t, serr) != ErrUnsatisfiable {
				t.Fatalf("Score with a bad weight: %v", serr)
			}
		})
	}
}

// TestAllocateErrorKindMatchesAnIdleNode: ErrInsufficient exactly when brute force
// finds an allocation on the same node with nothing used.
func TestAllocateErrorKindMatchesAnIdleNode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		used := genUsed(t, n)
		req := genRequest(t, n)
		inv, err := NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Allocate(inv, used, req)
		if err == nil {
			return
		}
		kind := errorKind(t, err)
		if req.RailLabel != "" && req.joint() && req.Joint == JointSamePCIe && railSpansRoots(n) {
			return // the documented bound of the rail search
		}
		idle, serr := newSpec(n, Used{}, req)
		if serr != nil {
			t.Fatal(serr)
		}
		if feasible := idle.feasible(); feasible != (kind == ErrInsufficient) {
			_, ierr := Allocate(inv, Used{}, req)
			t.Fatalf("error %q is %v, but an idle node feasible=%v (idle: %v) %+v", err, kind, feasible, ierr, req)
		}
	})
}

func TestUsedRemoveKeepsDevicesOtherAllocationsHold(t *testing.T) {
	gpu := GPUAllocation{Minor: 3}
	vf := VFAllocation{BDF: mustBDF("0000:3b:00.2")}
	a := Allocation{NICs: []NICAllocation{{BDF: mustBDF("0000:3b:00.0"), VFs: []VFAllocation{vf}}}, GPUs: []GPUAllocation{gpu}, ExclusiveRoots: []string{"pci0000:3a"}}
	b := Allocation{NICs: []NICAllocation{{BDF: mustBDF("0000:af:00.0"), Whole: true}}, GPUs: []GPUAllocation{gpu}, ExclusiveRoots: []string{"pci0000:3a"}}
	var u Used
	u.Add(a)
	u.Add(b)
	u.Remove(a)
	if fmt.Sprint(u.GPUs()) != "[3]" || fmt.Sprint(u.ExclusiveRoots()) != "[pci0000:3a]" {
		t.Fatalf("removing one of two holders released the shared GPU or root: GPUs %v roots %v", u.GPUs(), u.ExclusiveRoots())
	}
	if len(u.VFs()) != 0 || fmt.Sprint(u.PFs()) != "[0000:af:00.0]" {
		t.Fatalf("after Remove(a): VFs %v PFs %v", u.VFs(), u.PFs())
	}
	u.Remove(b)
	if !u.IsEmpty() {
		t.Fatalf("after removing both: %+v", u)
	}
	u.Remove(b) // nothing held: ignored
	if !u.IsEmpty() {
		t.Fatalf("removing what is not held changed u: %+v", u)
	}
}

func TestUsedCloneSharesNoState(t *testing.T) {
	var u Used
	u.HoldVF(mustBDF("0000:3b:00.2"))
	c := u.Clone()
	c.HoldGPU(1)
	c.Remove(Allocation{NICs: []NICAllocation{{VFs: []VFAllocation{{BDF: mustBDF("0000:3b:00.2")}}}}})
	u.HoldPF(mustBDF("0000:af:00.0"))
	if fmt.Sprint(u.VFs(), u.GPUs()) != "[0000:3b:00.2] []" || len(c.PFs()) != 0 || fmt.Sprint(c.GPUs()) != "[1]" {
		t.Fatalf("clone and original share state: u %+v, clone %+v", u, c)
	}
	var zero Used
	z := zero.Clone()
	z.HoldGPU(0)
	if !zero.IsEmpty() {
		t.Fatal("the clone of a zero Used shares state with it")
	}
}

// TestUsedAddRemoveRoundTrip: a plugin's per-node Used, with allocations added at
// Reserve and removed at Unreserve or deletion in any order, always equals what the
// remaining pods' annotations give, and returns to its start when all are removed.
func TestUsedAddRemoveRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		inv, err := NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		base := genUsed(t, n)
		start := base.Clone()
		used := base.Clone()
		var live []Allocation
		t.Repeat(map[string]func(*rapid.T){
			"reserve": func(t *rapid.T) {
				a, err := Allocate(inv, used, genRequest(t, n))
				if err != nil {
					return
				}
				used.Add(a)
				live = append(live, a)
			},
			"share a GPU": func(t *rapid.T) { // a GPU plugin's pod sharing a GPU
				if len(inv.gpus) == 0 {
					t.Skip("no GPUs")
				}
				g := rapid.SampledFrom(inv.gpus).Draw(t, "gpu")
				a := Allocation{Node: inv.name, GPUs: []GPUAllocation{{Minor: g.minor}}}
				used.Add(a)
				live = append(live, a)
			},
			"unreserve": func(t *rapid.T) {
				if len(live) == 0 {
					t.Skip("nothing reserved")
				}
				i := rapid.IntRange(0, len(live)-1).Draw(t, "which")
				used.Remove(live[i])
				live = append(live[:i], live[i+1:]...)
			},
			"": func(t *rapid.T) {
				want := base.Clone()
				for _, a := range live {
					want.Add(a)
				}
				if !sameUsed(used, want) {
					t.Fatalf("Used %+v, want %+v", used, want)
				}
			},
		})
		for len(live) > 0 {
			i := rapid.IntRange(0, len(live)-1).Draw(t, "drain")
			used.Remove(live[i])
			live = append(live[:i], live[i+1:]...)
		}
		if !sameUsed(used, start) || !sameUsed(base, start) {
			t.Fatalf("after removing everything: %+v, started with %+v (base now %+v)", used, start, base)
		}
	})
}

func TestRequestIsZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  Request
		want bool
	}{
		{"the zero value", Request{}, true},
		{"selectors and policies only", Request{Selector: sel("a", "b"), Scope: ScopePCIe, Exclusive: ExclusiveDevice, Joint: JointSamePCIe, Kind: VFs}, true},
		{"a count", Request{Count: 1}, false},
		{"all", Request{All: true}, false},
		{"a designated VF", Request{DesignatedVFs: []BDF{mustBDF("0000:3b:00.2")}}, false},
		{"GPUs only", Request{GPUs: 1}, false},
		{"given GPUs only", Request{WithGPUs: []int32{0}}, false},
	} {
		if got := tc.req.IsZero(); got != tc.want {
			t.Errorf("%s: IsZero = %v, want %v", tc.name, got, tc.want)
		}
		if tc.want {
			a, err := Allocate(twoRootNode(t), Used{}, tc.req)
			if err != nil || len(a.NICs)+len(a.GPUs) != 0 {
				t.Errorf("%s: a zero request allocated %+v, %v", tc.name, a, err)
			}
		}
	}
}

func TestRequestValidate(t *testing.T) {
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}
	for _, tc := range []struct {
		name string
		req  Request
		want string // "" when valid
	}{
		{"the zero value", Request{}, ""},
		{"a joint request", Request{Count: 2, GPUs: 2, Joint: JointSamePCIe, Selector: sel("a", "b")}, ""},
		{"a negative count", Request{Count: -1}, "count -1 is negative"},
		{"negative GPUs", Request{GPUs: -2}, "gpus -2 is negative"},
		{"an unknown kind", Request{Kind: 7}, "unknown kind 7"},
		{"an unknown scope", Request{Scope: "Rack"}, `unknown requiredTopologyScope "Rack"`},
		{"an unknown exclusive policy", Request{Exclusive: "Node"}, `unknown exclusivePolicy "Node"`},
		{"an unknown joint policy", Request{Joint: "SameNUMA"}, `unknown joint policy "SameNUMA"`},
		{"a bad selector", Request{Selector: bad}, "request: selector:"},
		{"a bad VF selector", Request{VFSelector: bad}, "request: vfSelector:"},
		{"a bad GPU selector", Request{GPUSelector: bad}, "request: gpuSelector:"},
		{"GPUs and given GPUs", Request{GPUs: 1, WithGPUs: []int32{0}}, "mutually exclusive"},
		{"a VF selector with whole PFs", Request{Kind: WholePF, VFSelector: sel("a", "b")}, "a VF selector with kind PF"},
		{"a designated VF twice", Request{DesignatedVFs: []BDF{mustBDF("0000:3b:00.2"), mustBDF("0000:3b:00.2")}}, "designated VF 0000:3b:00.2 named twice"},
		{"a given GPU twice", Request{WithGPUs: []int32{1, 1}}, "GPU 1 named twice"},
	} {
		err := tc.req.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
		if tc.want != "" {
			if _, aerr := Allocate(twoRootNode(t), Used{}, tc.req); !errors.Is(aerr, ErrUnsatisfiable) {
				t.Errorf("%s: Validate rejects it but Allocate says %v", tc.name, aerr)
			}
		}
	}
}

func TestDRADevicesUseTheStandardNUMANodeAttribute(t *testing.T) {
	if DRAAttributeNUMANode != "resource.kubernetes.io/numaNode" {
		t.Fatalf("DRAAttributeNUMANode is %q", DRAAttributeNUMANode)
	}
	inv := mustInv(t, "n1", gpuDev(0, "pci0000:3a", 1), nic(0, "0000:3b:00.0", "pci0000:3a", 1, nil))
	for _, d := range DRADevices(inv) {
		v, ok := d.Attributes["resource.kubernetes.io/numaNode"]
		if !ok || v.IntValue == nil || *v.IntValue != 1 {
			t.Errorf("device %s: numaNode %+v", d.Name, v)
		}
		for k := range d.Attributes {
			if strings.HasPrefix(string(k), "rdma.kplan.dev/numa") {
				t.Errorf("device %s still has %s", d.Name, k)
			}
		}
	}
}
