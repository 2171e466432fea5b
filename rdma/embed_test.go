package rdma

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan"
)

// sameUsed compares two Used by their holder counts (nil and empty maps alike).
func sameUsed(a, b *Used) bool {
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
	allVFs := func() *Used {
		u := new(Used)
		for _, pf := range inv.pfs {
			for _, v := range pf.vfs {
				u.HoldVF(v.bdf)
			}
		}
		return u
	}
	usedVF := func(b string) *Used {
		u := new(Used)
		u.HoldVF(mustBDF(b))
		return u
	}
	oneVF := func() *Used { return usedVF("0000:af:00.2") }
	for _, tc := range []struct {
		name   string
		inv    *Inventory
		used   *Used
		req    Request
		want   error
		reason kplan.Reason
		text   string
	}{
		{"every VF is held by other pods", inv, allVFs(), Request{Count: 1}, ErrInsufficient, ReasonInsufficientDevices, "need 1 VF, 0 free"},
		{"more VFs than the node has", inv, nil, Request{Count: 13}, ErrUnsatisfiable, ReasonTooFewDevices, "need 13 VFs, node has 12"},
		{"more VFs than the node has, some held", inv, oneVF(), Request{Count: 13}, ErrUnsatisfiable, ReasonTooFewDevices, "need 13 VFs, node has 12"},
		{"a designated VF held by another pod", inv, oneVF(), Request{DesignatedVFs: []BDF{mustBDF("0000:af:00.2")}}, ErrInsufficient, ReasonInsufficientDevices, "is in use"},
		{"a designated VF not on the node", inv, nil, Request{DesignatedVFs: []BDF{mustBDF("0000:01:00.2")}}, ErrUnsatisfiable, ReasonTooFewDevices, "is not on the node"},
		{"a selector no PF matches", inv, oneVF(), Request{Count: 1, Selector: sel("rdma-type", "storage")}, ErrUnsatisfiable, ReasonTooFewDevices, "none on the node"},
		{"a PCIe root shared with another pod, exclusive request", inv, usedVF("0000:3b:00.2"), Request{Count: 5, Exclusive: ExclusivePCIe}, ErrInsufficient, ReasonInsufficientDevices, "shared with other pods"},
		{"more VFs than any PCIe root has", inv, oneVF(), Request{Count: 9, Scope: ScopePCIe}, ErrUnsatisfiable, ReasonTopologyUnsatisfiable, "within one PCIe root, none has more than 8"},
		{"an invalid request", inv, nil, Request{Count: -1}, ErrUnsatisfiable, ReasonInvalidRequest, "count -1 is negative"},
		{"whole PFs on a VF-mode node with all VFs held", inv, allVFs(), Request{Kind: WholePF, Count: 1}, ErrInsufficient, ReasonInsufficientDevices, "has VFs in use"},
		{"a nil inventory", nil, nil, Request{Count: 1}, ErrUnsatisfiable, ReasonInvalidInventory, "nil inventory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Allocate(tc.inv, tc.used, tc.req)
			if err == nil {
				t.Fatal("Allocate succeeded")
			}
			if got := errorKind(t, err); got != tc.want {
				t.Fatalf("error %q wraps %v, want %v", err, got, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Reason != tc.reason || e.Message != err.Error() {
				t.Fatalf("error %q: %#v, want an *Error with reason %s", err, e, tc.reason)
			}
			if !strings.Contains(err.Error(), tc.text) || strings.Contains(err.Error(), "never satisfy") || strings.Contains(err.Error(), "free devices now") {
				t.Fatalf("error %q: want the descriptive text with %q and no sentinel text", err, tc.text)
			}
			if ferr := Fits(tc.inv, tc.used, tc.req); !errors.Is(ferr, tc.want) || ferr.Error() != err.Error() {
				t.Fatalf("Fits gives %v, Allocate %v", ferr, err)
			}
			var se *Error
			if _, serr := Score(tc.inv, tc.used, tc.req, ScoreOptions{}); !errors.Is(serr, tc.want) || !errors.As(serr, &se) || se.Reason != tc.reason {
				t.Fatalf("Score gives %v, want %v", serr, err)
			}
		})
	}
	t.Run("bad score options", func(t *testing.T) {
		_, err := Score(twoRootNode(t), nil, Request{Count: 1}, ScoreOptions{TopologyWeight: 101})
		var e *Error
		if errorKind(t, err) != ErrUnsatisfiable || !errors.As(err, &e) || e.Reason != ReasonInvalidOptions {
			t.Fatalf("Score with a bad weight: %#v", err)
		}
	})
}

// TestWaitAndNeverErrorTexts: an error the pod may outwait says what is free now; an
// error it never outwaits says what the node has, so it does not read like a wait.
func TestWaitAndNeverErrorTexts(t *testing.T) {
	// Two PCIe roots, each with two GPUs and a NIC with four VFs, and a third NIC that
	// is unhealthy. Other pods hold GPU 0, two VFs under pci0000:17 and one under
	// pci0000:ae.
	unhealthy := nic(2, "0000:d8:00.0", "pci0000:d7", 1, nil, vfRange(0, 0xd8, 4)...)
	unhealthy.Health = false
	inv := mustInv(t, "n1",
		gpuDev(0, "pci0000:17", 0), gpuDev(1, "pci0000:17", 0), gpuDev(2, "pci0000:ae", 1), gpuDev(3, "pci0000:ae", 1),
		nic(0, "0000:18:00.0", "pci0000:17", 0, nil, vfRange(0, 0x18, 4)...),
		nic(1, "0000:af:00.0", "pci0000:ae", 1, nil, vfRange(0, 0xaf, 4)...),
		unhealthy)
	used := new(Used)
	used.HoldGPU(0)
	used.HoldVF(mustBDF("0000:18:00.2"))
	used.HoldVF(mustBDF("0000:18:00.3"))
	used.HoldVF(mustBDF("0000:af:00.2"))
	for _, tc := range []struct {
		name   string
		req    Request
		reason kplan.Reason
		text   string
	}{
		{"VFs: wait", Request{Count: 6}, ReasonInsufficientDevices,
			"node n1: rdma: need 6 VFs, 5 free (PF 0000:d8:00.0: unhealthy)"},
		{"VFs: never", Request{Count: 9}, ReasonTooFewDevices,
			"node n1: rdma: need 9 VFs, node has 8 (PF 0000:d8:00.0: unhealthy)"},
		{"VFs one per PF: never", Request{Count: 3, OneVFPerPF: true}, ReasonTooFewDevices,
			"node n1: rdma: need 3 VFs one per PF, node has 2 (PF 0000:d8:00.0: unhealthy)"},
		{"GPUs: wait", Request{GPUs: 4}, ReasonInsufficientDevices,
			"node n1: rdma: need 4 GPUs, 3 free"},
		{"GPUs: never", Request{GPUs: 5}, ReasonTooFewDevices,
			"node n1: rdma: need 5 GPUs, node has 4"},
		{"one PCIe root: wait", Request{Count: 4, Scope: ScopePCIe}, ReasonInsufficientDevices,
			"node n1: rdma: need 4 VFs within one PCIe root, at most 3 free in any (pci0000:17: 2 free; pci0000:ae: 3 free; pci0000:d7: 0 free)"},
		{"one PCIe root: never", Request{Count: 5, Scope: ScopePCIe}, ReasonTopologyUnsatisfiable,
			"node n1: rdma: need 5 VFs within one PCIe root, none has more than 4 (pci0000:17: 4; pci0000:ae: 4; pci0000:d7: 0)"},
		{"GPUs and VFs on the same PCIe roots: wait", Request{GPUs: 2, Count: 6, Joint: JointSamePCIe}, ReasonInsufficientDevices,
			"node n1: rdma: need 2 GPUs and 6 VFs on the same PCIe roots (SamePCIe), no set of roots holds both (free: pci0000:17: 1 GPU, 2 VFs; pci0000:ae: 2 GPUs, 3 VFs)"},
		{"GPUs and VFs on the same PCIe roots: never", Request{GPUs: 1, Count: 5, Joint: JointSamePCIe}, ReasonTopologyUnsatisfiable,
			"node n1: rdma: need 1 GPU and 5 VFs on the same PCIe roots (SamePCIe), no set of roots holds both (pci0000:17: 2 GPUs, 4 VFs; pci0000:ae: 2 GPUs, 4 VFs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Fits(inv, used, tc.req)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Fits gives %#v, want an *Error", err)
			}
			if e.Reason != tc.reason || e.Message != tc.text {
				t.Fatalf("got  %s: %s\nwant %s: %s", e.Reason, e.Message, tc.reason, tc.text)
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
		var e *Error
		if !errors.As(err, &e) || (e.Reason == ReasonInsufficientDevices) != (kind == ErrInsufficient) {
			t.Fatalf("error %q is %v with reason %#v", err, kind, e)
		}
		if kind == ErrUnsatisfiable {
			// A never-fits error says what the node has: it is the idle node's error.
			if _, ierr := Allocate(inv, nil, req); ierr == nil || ierr.Error() != err.Error() {
				t.Fatalf("never-fits error %q, but on the idle node %v", err, ierr)
			}
		}
		if req.RailLabel != "" && req.joint() && req.Joint == JointSamePCIe && railSpansRoots(n) {
			return // the documented bound of the rail search
		}
		idle, serr := newSpec(n, nil, req)
		if serr != nil {
			t.Fatal(serr)
		}
		if feasible := idle.feasible(); feasible != (kind == ErrInsufficient) {
			_, ierr := Allocate(inv, nil, req)
			t.Fatalf("error %q is %v, but an idle node feasible=%v (idle: %v) %+v", err, kind, feasible, ierr, req)
		}
	})
}

func TestUsedRemoveKeepsDevicesOtherAllocationsHold(t *testing.T) {
	gpu := GPUAllocation{Minor: 3}
	vf := VFAllocation{BDF: mustBDF("0000:3b:00.2")}
	a := Allocation{NICs: []NICAllocation{{BDF: mustBDF("0000:3b:00.0"), VFs: []VFAllocation{vf}}}, GPUs: []GPUAllocation{gpu}, ExclusiveRoots: []string{"pci0000:3a"}}
	b := Allocation{NICs: []NICAllocation{{BDF: mustBDF("0000:af:00.0"), Whole: true}}, GPUs: []GPUAllocation{gpu}, ExclusiveRoots: []string{"pci0000:3a"}}
	u := new(Used)
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
	u := new(Used)
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
	var none *Used
	n := none.Clone()
	n.HoldGPU(0)
	if !none.IsEmpty() || none.GPUs() != nil || len(n.GPUs()) != 1 {
		t.Fatalf("the clone of a nil Used: %v, nil reads %v", n.GPUs(), none.GPUs())
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
			a, err := Allocate(twoRootNode(t), nil, tc.req)
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
			if _, aerr := Allocate(twoRootNode(t), nil, tc.req); !errors.Is(aerr, ErrUnsatisfiable) {
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
