// Command quickstart prints kplan's plans for the design scenarios, with no cluster:
//
//	go -C examples run ./quickstart
//
// It walks through six plans, each computed by one library call from plain values,
// exactly as a controller or webhook would call it:
//
//  1. ranktable: the design's scenario (two pods with 8 NPUs each on servers
//     192.168.1.10 and 192.168.1.11) and the ConfigMap table it produces;
//  2. rollout: a gang rolling update, reconcile by reconcile;
//  3. rollout: a group (rows x columns) rolling update, reconcile by reconcile;
//  4. revision: a ConfigMapSet partition plan, and its rollback;
//  5. rdma: a joint GPU + RDMA allocation on one PCIe root;
//  6. webhookpatch: the JSON patch a mutating webhook returns for a new pod.
//
// The output is deterministic (the clock is a fixed parameter), so it is checked by a
// golden test: examples/testdata/quickstart/output.txt.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/rdma"
	"github.com/kplan-dev/kplan/revision"
	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
	"github.com/kplan-dev/kplan/webhookpatch"
)

// now is the quickstart's clock: plans take the time as a parameter.
var now = time.Date(2025, 2, 14, 17, 51, 48, 0, time.UTC)

func main() {
	w := bufio.NewWriter(os.Stdout)
	err := run(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run prints every section to w.
func run(w io.Writer) error {
	sections := []struct {
		title string
		run   func(io.Writer) error
	}{
		{"1. ranktable: the design's scenario, 2 pods x 8 NPUs", rankTable},
		{"2. rollout: a gang rolling update, step by step", gangRollout},
		{"3. rollout: a group rolling update (rows x columns), step by step", groupRollout},
		{"4. revision: a ConfigMapSet partition plan", configMapSet},
		{"5. rdma: a joint GPU + RDMA allocation", jointAllocation},
		{"6. webhookpatch: the patch a mutating webhook returns", webhookPatch},
	}
	for i, s := range sections {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "== %s\n\n", s.title)
		if err := s.run(w); err != nil {
			return fmt.Errorf("%s: %w", s.title, err)
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------
// 1. ranktable

// designOwner is the design's ModelServing.
var designOwner = ranktable.Owner{
	ObjectMeta: metav1.ObjectMeta{Name: "qwen-inference", Namespace: "default", UID: "uid-qwen-inference"},
	GVK:        schema.GroupVersionKind{Group: "workload.kthena.io", Version: "v1alpha1", Kind: "ModelServing"},
}

// designPod is worker i of the design's scenario: server 192.168.1.1{0+i}, 8 NPUs with
// device IPs 10.20.0.{2+8i}..; annotated is whether the device plugin has written its
// ascend.com/ranktable annotation yet.
func designPod(i int, annotated bool) *corev1.Pod {
	name := fmt.Sprintf("qwen-inference-worker-%d", i)
	controller := true
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels: map[string]string{ranktable.LabelRole: "worker"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: designOwner.GVK.GroupVersion().String(), Kind: designOwner.GVK.Kind,
				Name: designOwner.Name, UID: designOwner.UID, Controller: &controller,
			}},
			CreationTimestamp: metav1.NewTime(now),
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "inference", Image: "mindie:2.0"}}},
	}
	if annotated {
		type device struct {
			ID string `json:"device_id"`
			IP string `json:"device_ip"`
		}
		ann := struct {
			PodName  string   `json:"pod_name"`
			ServerID string   `json:"server_id"`
			Devices  []device `json:"devices"`
		}{PodName: name, ServerID: fmt.Sprintf("192.168.1.%d", 10+i)}
		for d := range 8 {
			ann.Devices = append(ann.Devices, device{ID: fmt.Sprint(d), IP: fmt.Sprintf("10.20.0.%d", 2+8*i+d)})
		}
		b, _ := json.Marshal(ann)
		pod.Annotations = map[string]string{ranktable.DefaultAnnotationName: string(b)}
	}
	return pod
}

func rankTable(w io.Writer) error {
	// The owner's kthena.io/ranktable-template annotation names a template; this one
	// ships with the library (MindIE, one table per role replica).
	tmpl, err := ranktable.LoadLibraryTemplate(ranktable.LibraryMindIERole, ranktable.LoadOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "template %s: engine %s, level %s, parser %s, file %s/%s\n\n",
		tmpl.Name, tmpl.Engine, tmpl.Level, tmpl.ParserName, tmpl.MountPath, tmpl.Filename)

	in := ranktable.Input{
		Owner: designOwner, Template: tmpl, Now: now, Timeout: 10 * time.Minute,
		Expected: map[ranktable.GroupKey]int{{Role: "worker"}: 2},
		Pods:     []*corev1.Pod{designPod(0, true), designPod(1, false)},
	}
	fmt.Fprintln(w, "reconcile 1: worker-0 is annotated, worker-1 is not yet")
	res, err := ranktable.Plan(in)
	if err != nil {
		return err
	}
	printRankTable(w, res)

	// The reconciler wrote the ConfigMap; the next reconcile reads it back.
	in.ConfigMaps = []*corev1.ConfigMap{res.ConfigMaps[0].ConfigMap}
	in.Pods = []*corev1.Pod{designPod(0, true), designPod(1, true)}
	fmt.Fprintln(w, "\nreconcile 2: both pods are annotated")
	res, err = ranktable.Plan(in)
	if err != nil {
		return err
	}
	printRankTable(w, res)
	cm := res.ConfigMaps[0].ConfigMap
	fmt.Fprintf(w, "\nConfigMap %s/%s data[%s] (servers in order, rank ids 0..15):\n",
		cm.Namespace, cm.Name, tmpl.Filename)
	table, err := compactTable(cm.Data[tmpl.Filename])
	if err != nil {
		return err
	}
	fmt.Fprint(w, table)

	in.ConfigMaps = []*corev1.ConfigMap{cm}
	in.Pods = in.Pods[:1]
	fmt.Fprintln(w, "\nreconcile 3: worker-1 was deleted")
	res, err = ranktable.Plan(in)
	if err != nil {
		return err
	}
	printRankTable(w, res)
	return nil
}

func printRankTable(w io.Writer, res ranktable.Result) {
	for _, g := range res.Groups {
		fmt.Fprintf(w, "  group %s: %s, %d of %d pods", groupName(g.Group), g.Phase, g.Pods, g.Expected)
		if len(g.Missing) > 0 {
			fmt.Fprintf(w, ", waiting for the annotation of %s", strings.Join(g.Missing, ", "))
		}
		fmt.Fprintln(w)
	}
	for _, c := range res.ConfigMaps {
		fmt.Fprintf(w, "  ConfigMap %s: %s (%d bytes of table)\n", c.ConfigMap.Name, c.Action, len(c.ConfigMap.Data[ranktable.DefaultFilename]))
	}
	for _, e := range res.Events {
		fmt.Fprintf(w, "  event %s %s on %s %s\n", e.Type, e.Reason, e.Object.Kind, e.Object.Namespace+"/"+e.Object.Name)
	}
	if res.RequeueAfter > 0 {
		fmt.Fprintf(w, "  requeue after %s\n", res.RequeueAfter)
	}
}

// groupName names a ranktable group: serving group and role.
func groupName(k ranktable.GroupKey) string {
	switch {
	case k.Group == "":
		return "role " + k.Role
	case k.Role == "":
		return k.Group
	}
	return k.Group + " role " + k.Role
}

// compactTable prints one line per server with its devices as id=ip:rank.
func compactTable(data string) (string, error) {
	var t struct {
		Version     string `json:"version"`
		ServerCount string `json:"server_count"`
		Status      string `json:"status"`
		Servers     []struct {
			ServerID string `json:"server_id"`
			Devices  []struct {
				ID     string `json:"device_id"`
				IP     string `json:"device_ip"`
				RankID string `json:"rank_id"`
			} `json:"device"`
		} `json:"server_list"`
	}
	if err := json.Unmarshal([]byte(data), &t); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  version %s, server_count %s, status %s\n", t.Version, t.ServerCount, t.Status)
	for _, s := range t.Servers {
		fmt.Fprintf(&b, "  server %s:\n", s.ServerID)
		for i, d := range s.Devices {
			if i%4 == 0 {
				b.WriteString("   ")
			}
			fmt.Fprintf(&b, " device %s %-10s rank %-2s", d.ID, d.IP, d.RankID)
			if i%4 == 3 || i == len(s.Devices)-1 {
				trimmed := strings.TrimRight(b.String(), " ")
				b.Reset()
				b.WriteString(trimmed + "\n")
			}
		}
	}
	return b.String(), nil
}

// ---------------------------------------------------------------------------------
// 2 and 3. rollout

func available() rollout.State { return rollout.State{Ready: true, Available: true, Healthy: true} }

func gangRollout(w io.Writer) error {
	// Three gang replicas (serving groups), each a row of two member pods that are
	// updated together, from revision 1-a to 2-b, one gang unavailable at a time.
	var replicas []rollout.Replica
	for g := range 3 {
		name := fmt.Sprintf("group-%d", g)
		r := rollout.Replica{Name: name, Revision: "1-a"}
		for _, m := range []string{"leader", "worker"} {
			r.Members = append(r.Members, rollout.Member{Name: name + "-" + m, State: available()})
		}
		replicas = append(replicas, r)
	}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	strategy := rollout.Strategy{
		Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 3,
		MaxUnavailable: &one, MaxSurge: &zero,
	}
	fmt.Fprintln(w, "3 gangs of 2 pods (leader, worker) at 1-a -> 2-b; maxUnavailable 1, maxSurge 0")
	return simulate(w, rollouttest.Scenario{Strategy: strategy, Replicas: replicas, GangSize: 2})
}

func groupRollout(w io.Writer) error {
	// A rows x columns service: 4 rows of prefill and decode, each column keeping at
	// least 3 of 4 replicas available while the latest version's window slides.
	var replicas []rollout.Replica
	for _, col := range []string{"decode", "prefill"} {
		for row := range 4 {
			rev := "1-a"
			if col == "prefill" && row == 0 {
				rev = "2-b" // prefill already runs one replica ahead
			}
			replicas = append(replicas, rollout.Replica{
				Name: fmt.Sprintf("%s-%d", col, row), Revision: rev, Column: col, State: available(),
			})
		}
	}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	strategy := rollout.Strategy{
		Mode: rollout.Group, TargetRevision: "2-b", Replicas: 4,
		MaxUnavailable: &one, MaxSurge: &zero,
	}
	fmt.Fprintln(w, "2 columns (decode, prefill) x 4 rows at 1-a -> 2-b, prefill-0 already at 2-b; maxUnavailable 1 per column")
	return simulate(w, rollouttest.Scenario{Strategy: strategy, Replicas: replicas})
}

// simulate plans and applies steps until the rollout completes, the way a controller
// and the cluster would: an updated replica becomes available one reconcile later.
// Every step is checked against the rollout invariants.
func simulate(w io.Writer, sc rollouttest.Scenario) error {
	sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
	fmt.Fprintf(w, "  start:       %s\n", describeReplicas(sim.Replicas, sc.Strategy.TargetRevision))
	for range 20 {
		step, err := sim.Reconcile()
		if err != nil {
			return err
		}
		if step.Complete {
			fmt.Fprintf(w, "  reconcile %d: complete\n", sim.Reconciles)
			return nil
		}
		fmt.Fprintf(w, "  reconcile %d: %s\n", sim.Reconciles, describeStep(step, sc.Strategy.Mode))
		fmt.Fprintf(w, "       after: %s\n", describeReplicas(sim.Replicas, sc.Strategy.TargetRevision))
		// The cluster catches up: updated replicas become available.
		sim.Settle(nil)
	}
	return fmt.Errorf("not complete after %d reconciles", sim.Reconciles)
}

func describeStep(step rollout.Step, mode rollout.Mode) string {
	var parts []string
	for _, u := range step.Update {
		s := fmt.Sprintf("update %s %s->%s", u.Replica, u.From, u.To)
		if len(u.Members) > 0 {
			s += " [" + strings.Join(u.Members, " ") + "]"
		}
		parts = append(parts, s)
	}
	for _, c := range step.Create {
		parts = append(parts, fmt.Sprintf("create %d at %s%s", c.Count, c.Revision, inColumn(c.Column)))
	}
	for _, d := range step.Delete {
		parts = append(parts, "delete "+d)
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing to do")
	}
	s := strings.Join(parts, ", ")
	if mode == rollout.Group {
		s += fmt.Sprintf("; window: %d per column at the target", step.Latest)
	}
	if n := len(step.Waiting); n > 0 {
		reasons := map[string]int{}
		for _, wt := range step.Waiting {
			reasons[wt.Reason]++
		}
		var rs []string
		for r, c := range reasons {
			rs = append(rs, fmt.Sprintf("%d (%s)", c, r))
		}
		sort.Strings(rs)
		s += "; waiting: " + strings.Join(rs, ", ")
	}
	return s
}

func inColumn(c string) string {
	if c == "" {
		return ""
	}
	return " in " + c
}

// describeReplicas prints each replica as name@revision, with * when it is not
// available (yet), and how many are done.
func describeReplicas(replicas []rollout.Replica, target string) string {
	sorted := append([]rollout.Replica(nil), replicas...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var parts []string
	done := 0
	for _, r := range sorted {
		mark := ""
		if !rollouttest.Available(&r) {
			mark = "*"
		}
		if r.Revision == target && mark == "" {
			done++
		}
		parts = append(parts, fmt.Sprintf("%s@%s%s", r.Name, r.Revision, mark))
	}
	return fmt.Sprintf("%s  [%d/%d available at %s]", strings.Join(parts, " "), done, len(sorted), target)
}

// ---------------------------------------------------------------------------------
// 4. revision

func configMapSet(w io.Writer) error {
	// The set exists before its pods: the webhook injects every pod created after it
	// (Plan leaves pods without the reload sidecar, or older than the set, alone).
	created := now.Add(-2 * time.Minute)
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "demo", Name: "engine-config", Generation: 1, CreationTimestamp: metav1.NewTime(created),
		},
		Spec: revision.ConfigMapSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "engine"}},
			Data:       map[string]string{"settings.yaml": "max_batch: 8\n"},
			Containers: []revision.ContainerInjectSpec{{Name: "engine", MountPath: "/etc/engine"}},
		},
	}
	keys, err := revision.KeysFor(set.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ConfigMapSet demo/%s over 4 pods; pod annotations:\n  %s\n  %s\n\n", set.Name, keys.UpdateRevision, keys.CurrentRevision)

	// The pods, as the mutating webhook creates them: revision.Inject adds the files'
	// volume, the reload sidecar and the mounts, and picks each pod's first revision.
	fmt.Fprintln(w, "webhook: each new pod is injected (files volume, reload sidecar, mounts)")
	var pods []*corev1.Pod
	for _, name := range []string{"engine-a", "engine-b", "engine-c", "engine-d"} {
		born := created.Add(time.Minute)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "demo", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "engine"},
				CreationTimestamp: metav1.NewTime(born),
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "engine:1.0"}}},
		}
		res, err := revision.Inject(pod, revision.InjectInput{
			Set: set, Pods: pods, KubeVersion: "v1.31.0",
			Sidecar: revision.SidecarOptions{Image: "configmapset-reload:1"}, Now: born,
		})
		if err != nil {
			return err
		}
		if !res.Changed {
			return fmt.Errorf("pod %s: not injected", name)
		}
		fmt.Fprintf(w, "  %s: created with sidecar %s, wants revision %s\n", name, revision.ReloadSidecarName(set.Name), res.Revision)
		pods = append(pods, pod)
	}
	fmt.Fprintln(w)

	var hub *corev1.ConfigMap
	plan := func(title string, at time.Time) error {
		res, err := revision.Plan(revision.Input{Set: set, Hub: hub, Pods: pods, Now: at})
		if err != nil {
			return err
		}
		fmt.Fprintln(w, title)
		if res.Hub != nil {
			hub = res.Hub
			fmt.Fprintf(w, "  write hub ConfigMap %s: revisions %v (oldest first)\n", hub.Name, res.Revisions)
		}
		for _, p := range res.Pods {
			if v := p.Annotations[keys.UpdateRevision]; v != nil {
				fmt.Fprintf(w, "  patch %s: want revision %s\n", p.Name, *v)
			}
		}
		for _, e := range res.Events {
			fmt.Fprintf(w, "  event %s: %s\n", e.Reason, e.Message)
		}
		st := res.Status
		fmt.Fprintf(w, "  status: current %s, update %s, %d/%d pods updated\n", orNone(st.CurrentRevision), st.UpdateRevision, st.UpdatedPods, st.MatchedPods)
		// Apply the patches, and play the node side: each pod confirms its revision.
		for i, p := range pods {
			for _, pp := range res.Pods {
				if pp.Name == p.Name {
					p = pp.Apply(p)
				}
			}
			p = p.DeepCopy()
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			if want := p.Annotations[keys.UpdateRevision]; want != "" {
				p.Annotations[keys.CurrentRevision] = want
				p.Annotations[keys.CurrentRevisionTimestamp] = revision.FormatTimestamp(at)
			}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			pods[i] = p
		}
		set.Status = res.Status
		return nil
	}
	if err := plan("reconcile 1: the hub gets the first revision (the pods already want it)", now); err != nil {
		return err
	}
	if err := plan("reconcile 2: every pod confirmed it", now.Add(time.Minute)); err != nil {
		return err
	}
	half := intstr.FromString("50%")
	set.Generation++
	set.Spec.Data = map[string]string{"settings.yaml": "max_batch: 16\n"}
	set.Spec.UpdateStrategy.Partition = &half
	if err := plan("reconcile 3: new data, partition 50% (half the pods kept on the old revision)", now.Add(2*time.Minute)); err != nil {
		return err
	}
	all := intstr.FromString("100%")
	set.Generation++
	set.Spec.UpdateStrategy.Partition = &all
	return plan("reconcile 4: partition 100%: roll back", now.Add(3*time.Minute))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// ---------------------------------------------------------------------------------
// 5. rdma

func jointAllocation(w io.Writer) error {
	minor := func(v int32) *int32 { return &v }
	// A GPU server as koordinator's Device object describes it: two PCIe roots, each
	// with two GPUs and one RDMA NIC with four SR-IOV VFs.
	node := rdma.Node{Name: "gpu-node-1"}
	for r, root := range []string{"pci0000:17", "pci0000:ae"} {
		bus := []int{0x18, 0xaf}[r]
		for g := range 2 {
			node.Devices = append(node.Devices, rdma.DeviceInfo{
				Type: rdma.GPU, Minor: minor(int32(2*r + g)), UUID: fmt.Sprintf("GPU-%d", 2*r+g), Health: true,
				Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root},
			})
		}
		pf := fmt.Sprintf("0000:%02x:00.0", bus)
		var vfs []rdma.VirtualFunction
		for v := range 4 {
			vfs = append(vfs, rdma.VirtualFunction{Minor: int32(v), BusID: fmt.Sprintf("0000:%02x:00.%d", bus, v+2)})
		}
		node.Devices = append(node.Devices, rdma.DeviceInfo{
			Type: rdma.RDMA, Minor: minor(int32(r)), UUID: pf, Health: true,
			Labels:   map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root, BusID: pf},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: vfs}},
		})
	}
	inv, err := rdma.NewInventory(node)
	if err != nil {
		return err
	}
	capacity, err := rdma.Capacity(inv, rdma.CountModel)
	if err != nil {
		return err
	}
	q := capacity[rdma.ResourceRDMA]
	fmt.Fprintf(w, "node %s: GPUs 0,1 and NIC 0000:18:00.0 on pci0000:17; GPUs 2,3 and NIC 0000:af:00.0 on pci0000:ae; capacity %s=%s\n",
		inv.Name(), rdma.ResourceRDMA, q.String())

	// Another pod already holds GPU 0.
	var used rdma.Used
	used.HoldGPU(0)
	req := rdma.Request{Count: 1, GPUs: 1, Joint: rdma.JointSamePCIe}
	fmt.Fprintln(w, "GPU 0 is in use; the pod asks for 1 GPU and 1 VF on the same PCIe root (joint, SamePCIe)")
	a, err := rdma.Allocate(inv, used, req)
	if err != nil {
		return err
	}
	for _, g := range a.GPUs {
		fmt.Fprintf(w, "  GPU %d (%s) on %s, NUMA node %d\n", g.Minor, g.ID, g.PCIeRoot, g.NUMANode)
	}
	for _, n := range a.NICs {
		for _, vf := range n.VFs {
			fmt.Fprintf(w, "  VF %s of PF %s on %s, NUMA node %d\n", vf.BDF, n.BDF, n.PCIeRoot, n.NUMANode)
		}
	}
	value, err := rdma.EncodeAllocated("", a, rdma.CountModel)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  annotation %s:\n    %s\n", rdma.AnnotationDeviceAllocated, value)
	ids, err := rdma.DeviceIDsFromPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{rdma.AnnotationDeviceAllocated: value}}})
	if err != nil {
		return err
	}
	env := rdma.PCIDeviceEnv(string(rdma.ResourceRDMA), ids)
	fmt.Fprintf(w, "  container env: %s=%s\n", env.Name, env.Value)

	// A second pod: GPUs 2 and 3 share pci0000:ae with a NIC, so 2 GPUs + 2 VFs fit
	// there; 3 GPUs do not fit, since only 2 are free.
	used.Add(a)
	for _, gpus := range []int{2, 3} {
		fmt.Fprintf(w, "a second pod asks for %d GPUs and %d VFs, SamePCIe:\n", gpus, gpus)
		b, err := rdma.Allocate(inv, used, rdma.Request{Count: gpus, GPUs: gpus, Joint: rdma.JointSamePCIe})
		if err != nil {
			fmt.Fprintf(w, "  no fit: %v\n", err)
			continue
		}
		var got []string
		for _, g := range b.GPUs {
			got = append(got, fmt.Sprintf("GPU %d", g.Minor))
		}
		for _, n := range b.NICs {
			for _, vf := range n.VFs {
				got = append(got, "VF "+vf.BDF.String())
			}
		}
		fmt.Fprintf(w, "  %s\n", strings.Join(got, ", "))
	}
	return nil
}

// ---------------------------------------------------------------------------------
// 6. webhookpatch

func webhookPatch(w io.Writer) error {
	// The pod kthena creates for worker 0, before admission.
	pod := designPod(0, false)
	pod.Labels["app"] = "engine"
	fmt.Fprintf(w, "pod %s/%s arrives at the mutating webhook, which injects:\n", pod.Namespace, pod.Name)

	mutated := pod.DeepCopy()
	tmpl, err := ranktable.LoadLibraryTemplate(ranktable.LibraryMindIERole, ranktable.LoadOptions{})
	if err != nil {
		return err
	}
	key := ranktable.KeyOf(pod, tmpl.Level, ranktable.Grouping{})
	cmName := ranktable.ConfigMapName(designOwner.Name, key)
	if _, err := ranktable.Inject(mutated, ranktable.InjectOptions{ConfigMapName: cmName, Template: tmpl}); err != nil {
		return err
	}
	fmt.Fprintf(w, "  - the ranktable ConfigMap %s, its wait init container and mount\n", cmName)

	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "engine-config"},
		Spec: revision.ConfigMapSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "engine"}},
			Data:       map[string]string{"settings.yaml": "max_batch: 8\n"},
			Containers: []revision.ContainerInjectSpec{{Name: "inference", MountPath: "/etc/engine"}},
		},
	}
	res, err := revision.Inject(mutated, revision.InjectInput{
		Set: set, KubeVersion: "v1.31.0", Sidecar: revision.SidecarOptions{Image: "configmapset-reload:1"}, Now: now,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  - the ConfigMapSet %s files (revision %s) with its reload sidecar\n", set.Name, res.Revision)
	if errs := webhookpatch.Validate(mutated); len(errs) > 0 {
		return errs.ToAggregate()
	}

	ops, err := webhookpatch.Diff(pod, mutated)
	if err != nil {
		return err
	}
	patch, patchType, err := webhookpatch.Patch(ops)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "patch (%s, %d bytes), one operation per line, long values cut:\n", *patchType, len(patch))
	for _, op := range ops {
		b, err := json.Marshal(op.Value)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %-6s %-36s %s\n", op.Op, op.Path, cut(string(b), 90))
	}

	// Webhooks are re-invoked: running the same injection again changes nothing.
	again := mutated.DeepCopy()
	if _, err := ranktable.Inject(again, ranktable.InjectOptions{ConfigMapName: cmName, Template: tmpl}); err != nil {
		return err
	}
	if _, err := revision.Inject(again, revision.InjectInput{
		Set: set, KubeVersion: "v1.31.0", Sidecar: revision.SidecarOptions{Image: "configmapset-reload:1"}, Now: now,
	}); err != nil {
		return err
	}
	ops, err = webhookpatch.Diff(mutated, again)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "second invocation: %d operations\n", len(ops))
	return nil
}

// cut shortens s to n bytes, saying how long it was.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:n], len(s))
}
