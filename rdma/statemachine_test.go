package rdma

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"
)

// TestNodeStateMachine runs a node through pods being allocated, deleted and finishing.
// The model is which PF or VF each live pod holds; what is used is always rebuilt from
// the pods' annotations with UsedByPods, as a scheduler plugin would.
func TestNodeStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		inv, err := NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		var pods []*corev1.Pod
		owner := map[BDF]string{} // PF held whole or VF -> pod name
		next := 0
		t.Repeat(map[string]func(*rapid.T){
			"allocate": func(t *rapid.T) {
				req := genRequest(t, n)
				used, err := UsedByPods(inv, pods)
				if err != nil {
					t.Fatal(err)
				}
				a, err := Allocate(inv, used, req)
				if err != nil {
					return
				}
				s, _ := newSpec(n, used, req)
				if err := s.check(s.unitsOf(a), gpuMinors(a)); err != nil {
					t.Fatalf("invalid allocation: %v", err)
				}
				name := fmt.Sprint("p", next)
				next++
				for _, u := range s.unitsOf(a) {
					k := u.vf
					if u.whole {
						k = u.pf
					}
					if o, ok := owner[k]; ok {
						t.Fatalf("%s given to %s is held by %s", k, name, o)
					}
					owner[k] = name
				}
				v, err := EncodeAllocated("", a, CountModel)
				if err != nil {
					t.Fatal(err)
				}
				ann := map[string]string{AnnotationDeviceAllocated: v}
				if req.Exclusive != ExclusiveNone {
					ann[AnnotationDeviceAllocateHint] = fmt.Sprintf(`{"rdma":{"exclusivePolicy":%q}}`, req.Exclusive)
				}
				pods = append(pods, pod(name, ann, 1))
			},
			"delete": func(t *rapid.T) {
				if len(pods) == 0 {
					t.Skip("no pods")
				}
				i := rapid.IntRange(0, len(pods)-1).Draw(t, "victim")
				forget(owner, pods[i].Name)
				pods = slices.Delete(pods, i, i+1)
			},
			"finish": func(t *rapid.T) {
				if len(pods) == 0 {
					t.Skip("no pods")
				}
				i := rapid.IntRange(0, len(pods)-1).Draw(t, "finished")
				p := pods[i].DeepCopy()
				p.Status.Phase = corev1.PodSucceeded
				pods[i] = p
				forget(owner, p.Name)
			},
			"": func(t *rapid.T) {
				used, err := UsedByPods(inv, pods)
				if err != nil {
					t.Fatal(err)
				}
				var want []BDF
				for k := range owner {
					want = append(want, k)
				}
				slices.SortFunc(want, BDF.Compare)
				got := append(used.PFs(), used.VFs()...)
				slices.SortFunc(got, BDF.Compare)
				if len(want) == 0 {
					want = nil
				}
				if len(got) == 0 {
					got = nil
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("PFs and VFs the pods hold differ from the model (-model +pods):\n%s", diff)
				}
			},
		})
	})
}

func forget(owner map[BDF]string, name string) {
	for k, o := range owner {
		if o == name {
			delete(owner, k)
		}
	}
}

// TestInventoryIsSafeToShare allocates from one inventory on many goroutines (run with
// -race) and checks the inventory is unchanged and every answer the same.
func TestInventoryIsSafeToShare(t *testing.T) {
	inv := railNode(t)
	fresh := railNode(t)
	req := Request{Kind: WholePF, Count: 8, Selector: sel("rdma-type", "compute"), GPUs: 8, Joint: JointSamePCIe, RailLabel: "rail"}
	want, err := Allocate(inv, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				a, err := Allocate(inv, nil, req)
				if err != nil {
					errs <- err
					return
				}
				if diff := cmp.Diff(want, a); diff != "" {
					errs <- fmt.Errorf("allocation differs from the first one (-want +got):\n%s", diff)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The inventory is all unexported fields; compare every one, as reflect.DeepEqual would.
	if diff := cmp.Diff(fresh, inv, cmp.AllowUnexported(Inventory{}, pfInfo{}, vfInfo{}, vfRef{}, gpuInfo{})); diff != "" {
		t.Fatalf("Allocate changed the inventory (-fresh +after):\n%s", diff)
	}
}
