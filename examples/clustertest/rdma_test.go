package clustertest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kplan-dev/kplan/examples/clustertest"
	"github.com/kplan-dev/kplan/examples/internal/schedharness"
	"github.com/kplan-dev/kplan/examples/internal/testenv"
	"github.com/kplan-dev/kplan/rdma"
)

// rdmaSchedulerName is the scheduler profile the RDMA test's pods name: the
// plugin's kube-scheduler places only them, the other tests' pods are bound by
// their namespaces' kubelets.
const rdmaSchedulerName = "kplan-rdma"

// TestLeaderWorkerSetPodsPlacedByRDMAPlugin: with kube-scheduler running kplan's
// RDMA plugin and two nodes of one PF each (2 storage VFs, 2 compute VFs), a
// LeaderWorkerSet of 2 groups of 2 whose pods ask one compute VF each (resource
// koordinator.sh/rdma and the allocate-hint annotation) has every pod bound by
// the scheduler (the kubelets do not bind) with a device-allocated annotation
// naming compute VFs of its node's Device, no VF held twice (so two pods per
// node: NodeResourcesFit alone would admit four), and all pods Running and Ready.
func TestLeaderWorkerSetPodsPlacedByRDMAPlugin(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	schedBin, err := testenv.EnsureScheduler(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	crd, err := schedharness.DeviceCRD(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cluster.Config, envtest.CRDInstallOptions{Paths: []string{crd}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install %s: %v", crd, err)
	}
	undoRBAC, err := schedharness.ApplyConfig(ctx, cs, "rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(undoRBAC)

	// No default kubelet: it would bind the pods itself.
	ns, err := cluster.CreateNamespace(ctx, "lws-rdma")
	if err != nil {
		t.Fatal(err)
	}
	shape := schedharness.Shape{Roots: 1, PFs: 1, VFs: 4, VFGroups: []map[string]string{{"rdma-type": "storage"}, {"rdma-type": "compute"}}}
	nodes := map[string]rdma.Node{}
	for _, suffix := range []string{"a", "b"} {
		n := schedharness.MakeNode(ns+"-"+suffix, shape)
		nodes[n.Name] = n
		t.Cleanup(func() {
			bg := context.Background()
			_ = cs.CoreV1().Nodes().Delete(bg, n.Name, metav1.DeleteOptions{})
			_ = dyn.Resource(schedharness.DeviceGVR).Delete(bg, n.Name, metav1.DeleteOptions{})
		})
		if err := schedharness.CreateNode(ctx, cs, dyn, n); err != nil {
			t.Fatal(err)
		}
		opts := kubeletDelays
		opts.Namespace, opts.Node, opts.NoBind, opts.Seed = ns, n.Name, true, uint64(len(t.Name()))
		k, err := testenv.StartKubelet(ctx, cluster.Client, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(k.Stop)
	}

	user, err := cluster.Env.Environment().ControlPlane.AddUser(envtest.User{Name: schedharness.SchedulerUser}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg, err := schedharness.WriteConfig(dir, kubeconfig, schedharness.SetSchedulerName(rdmaSchedulerName))
	if err != nil {
		t.Fatal(err)
	}
	sched, err := schedharness.StartScheduler(schedBin, cfg, filepath.Join(dir, "scheduler.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sched.Stop()
		if t.Failed() {
			t.Logf("scheduler log (last lines):\n%s", sched.Tail(60))
		}
	})

	const name, replicas, size = "rdma", 2, 2
	hint, err := json.Marshal(rdma.DeviceAllocateHints{rdma.RDMA: &rdma.DeviceHint{
		VFSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"rdma-type": "compute"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	lws := lwsObject(ns, name, replicas, size, "engine:v1", nil)
	tmpl := rdmaPodTemplate("engine:v1", string(hint))
	if err := unstructured.SetNestedMap(lws.Object, tmpl, "spec", "leaderWorkerTemplate", "workerTemplate"); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client.Create(ctx, lws); err != nil {
		t.Fatal(err)
	}
	pods := waitPodsReady(t, ctx, ns, client.MatchingLabels{clustertest.LabelName: name}, replicas*size, clustertest.LabelGroupIndex, clustertest.LabelWorkerIndex)

	holder := map[string]string{} // node and VF BDF -> pod
	perNode := map[string]int{}
	for i := range pods {
		p := &pods[i]
		t.Run(p.Name, func(t *testing.T) {
			if p.Spec.SchedulerName != rdmaSchedulerName {
				t.Errorf("schedulerName %q, want %q", p.Spec.SchedulerName, rdmaSchedulerName)
			}
			n, ok := nodes[p.Spec.NodeName]
			if !ok {
				t.Fatalf("bound to %q, not a node of this test", p.Spec.NodeName)
			}
			perNode[n.Name]++
			if c := sched.LogCount("Successfully bound pod to node", `pod="`+ns+"/"+p.Name+`"`, `node="`+n.Name+`"`); c != 1 {
				t.Errorf("the scheduler logged binding the pod to %s %d times, want 1", n.Name, c)
			}
			value, ok := p.Annotations[rdma.AnnotationDeviceAllocated]
			if !ok {
				t.Fatalf("no %s annotation", rdma.AnnotationDeviceAllocated)
			}
			inv, err := rdma.NewInventory(n)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rdma.AllocationFromPod(inv, p); err != nil {
				t.Errorf("the annotation does not fit its node's Device: %v", err)
			}
			compute := computeVFs(n)
			dec, err := rdma.DecodeAllocated(value)
			if err != nil {
				t.Fatal(err)
			}
			var vfs []string
			for _, e := range dec.RDMA {
				if e.Extension == nil {
					t.Errorf("entry %+v holds a whole PF, want one VF", e)
					continue
				}
				for _, vf := range e.Extension.VirtualFunctions {
					vfs = append(vfs, vf.BusID)
				}
			}
			if len(vfs) != 1 {
				t.Fatalf("annotation %s holds VFs %v, want one", value, vfs)
			}
			if !compute[vfs[0]] {
				t.Errorf("VF %s is not a compute VF of %s's Device", vfs[0], n.Name)
			}
			key := n.Name + " " + vfs[0]
			if other, ok := holder[key]; ok {
				t.Errorf("VF %s on %s is held by both %s and %s", vfs[0], n.Name, other, p.Name)
			}
			holder[key] = p.Name
		})
	}
	for n := range nodes {
		if perNode[n] != 2 {
			t.Errorf("node %s runs %d pods, want 2 (one per compute VF)", n, perNode[n])
		}
	}
}

// rdmaPodTemplate is a pod template of one container running image that asks the
// plugin's profile for one koordinator.sh/rdma unit, with the allocate-hint
// annotation hint.
func rdmaPodTemplate(image, hint string) map[string]any {
	res := map[string]any{"cpu": "10m", string(rdma.ResourceRDMA): "1"}
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{rdma.AnnotationDeviceAllocateHint: hint}},
		"spec": map[string]any{
			"schedulerName":                 rdmaSchedulerName,
			"terminationGracePeriodSeconds": int64(1),
			"containers": []any{map[string]any{
				"name": "main", "image": image,
				"resources": map[string]any{"requests": res, "limits": res},
			}},
		},
	}
}

// computeVFs are the BDFs of the VFs labelled rdma-type=compute on node n.
func computeVFs(n rdma.Node) map[string]bool {
	out := map[string]bool{}
	for _, d := range n.Devices {
		for _, g := range d.VFGroups {
			if g.Labels["rdma-type"] != "compute" {
				continue
			}
			for _, vf := range g.VFs {
				out[vf.BusID] = true
			}
		}
	}
	return out
}
