package schedulertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplan-dev/kplan/rdma"
)

// throughputEnv names the scale of TestSchedulingThroughput, "<nodes>x<pods>"; the
// test is skipped without it.
const throughputEnv = "KPLAN_THROUGHPUT"

// throughputBatchableEnv, when set, configures PodTopologySpread without default
// constraints in every run, so that pods can be signed and batched.
const throughputBatchableEnv = "KPLAN_THROUGHPUT_BATCHABLE"

// throughputGPUsEnv sets the GPUs each pod asks for (default 2, four pods per node;
// 8 fills a node).
const throughputGPUsEnv = "KPLAN_THROUGHPUT_GPUS"

// TestSchedulingThroughput measures scheduling throughput, scheduler_perf style: pods
// are created first, then a scheduler is started and the time from its first to its
// last binding is taken. Nodes have the shape (2 PCIe roots x 4 GPUs x 2 PFs x
// 8 VFs). Runs on the same nodes:
//
//   - rdma: the plugin enabled, pods with a joint request (2 GPUs and 2 VFs on the
//     GPUs' PCIe roots);
//   - baseline: the same binary with the plugin disabled, pods without device requests;
//   - the same baseline with the OpportunisticBatching feature off;
//   - extended: the plugin disabled, pods with the rdma run's resources and
//     annotations (the nodes advertise them): the stock scheduler's cost of the
//     extended resources, without the plugin's;
//   - the rdma run with the OpportunisticBatching feature off.
//
// Run with KPLAN_THROUGHPUT=<nodes>x<pods>, e.g. 1000x2000. KPLAN_THROUGHPUT_ARGS adds
// command-line arguments to the scheduler of the rdma run, e.g. to serve pprof:
// "--secure-port=10259 --authorization-always-allow-paths=/debug/pprof,/debug/pprof/profile
// --authentication-skip-lookup".
func TestSchedulingThroughput(t *testing.T) {
	scale := os.Getenv(throughputEnv)
	if scale == "" {
		t.Skip("set " + throughputEnv + "=<nodes>x<pods> to measure")
	}
	needEnv(t)
	var nNodes, nPods int
	if _, err := fmt.Sscanf(scale, "%dx%d", &nNodes, &nPods); err != nil {
		t.Fatalf("%s=%q: %v", throughputEnv, scale, err)
	}
	ctx := context.Background()
	load0 := loadAvg()
	s := shape{roots: 2, gpus: 4, pfs: 2, vfs: 8}
	var specs []rdma.Node
	for i := 0; i < nNodes; i++ {
		specs = append(specs, makeNode(fmt.Sprintf("tp-%04d", i), s))
	}
	start := time.Now()
	createNodesParallel(t, ctx, specs)
	t.Logf("created %d nodes with Device objects in %s", nNodes, time.Since(start).Round(time.Millisecond))

	gpus := 2
	if v := os.Getenv(throughputGPUsEnv); v != "" {
		if _, err := fmt.Sscanf(v, "%d", &gpus); err != nil {
			t.Fatalf("%s=%q: %v", throughputGPUsEnv, v, err)
		}
	}
	joint := podSpec{rdma: 2, gpus: gpus, hint: &rdma.DeviceHint{VFSelector: &metav1.LabelSelector{}},
		joint: &rdma.DeviceJointAllocate{DeviceTypes: []rdma.DeviceType{rdma.GPU, rdma.RDMA}, RequiredScope: rdma.JointSamePCIe}}
	// With PodTopologySpread's system default constraints (the default) no pod is
	// signed, so opportunistic batching never applies; List without constraints
	// lets it.
	var spread []any
	if os.Getenv(throughputBatchableEnv) != "" {
		spread = []any{map[string]any{"name": "PodTopologySpread", "args": map[string]any{
			"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "PodTopologySpreadArgs", "defaultingType": "List"}}}
	}
	// scheduler_perf's client limits: the default (50 QPS) would measure the API
	// client, not scheduling.
	fast := func(cfg map[string]any) {
		c := cfg["clientConnection"].(map[string]any)
		c["qps"], c["burst"] = 5000, 5000
		p := cfg["profiles"].([]any)[0].(map[string]any)
		p["pluginConfig"] = append(p["pluginConfig"].([]any), spread...)
	}
	rdmaRate := measure(t, ctx, "tp-rdma", nPods, joint, true, fast, strings.Fields(os.Getenv("KPLAN_THROUGHPUT_ARGS"))...)
	disable := func(cfg map[string]any) {
		fast(cfg)
		p := cfg["profiles"].([]any)[0].(map[string]any)
		p["plugins"] = map[string]any{"multiPoint": map[string]any{"disabled": []any{map[string]any{"name": "KplanRDMA"}}}}
		p["pluginConfig"] = spread
	}
	baseRate := measure(t, ctx, "tp-base", nPods, podSpec{}, false, disable)
	unbatchedRate := measure(t, ctx, "tp-base-unbatched", nPods, podSpec{}, false, disable, "--feature-gates=OpportunisticBatching=false")
	extRate := measure(t, ctx, "tp-ext", nPods, joint, false, disable)
	// The plugin signs pods by their request, so batching may apply to them too when
	// a pod fills its node (e.g. 8 GPUs).
	rdmaUnbatchedRate := measure(t, ctx, "tp-rdma-unbatched", nPods, joint, true, fast, "--feature-gates=OpportunisticBatching=false")
	t.Logf("scale %d nodes x %d pods of %d GPUs: rdma %.1f pods/s; baseline %.1f pods/s (ratio %.2f); baseline without batching %.1f pods/s (ratio %.2f); extended resources without the plugin %.1f pods/s (ratio %.2f); rdma without batching %.1f pods/s (rdma/that %.2f); load average before %s, after %s",
		nNodes, nPods, gpus, rdmaRate, baseRate, rdmaRate/baseRate, unbatchedRate, rdmaRate/unbatchedRate, extRate, rdmaRate/extRate, rdmaUnbatchedRate, rdmaRate/rdmaUnbatchedRate, load0, loadAvg())
}

// processCPU returns the CPU time (user and system) used so far by this test's
// child processes by command name (kube-apiserver, etcd, kube-scheduler), from
// /proc; empty off Linux. Unlike wall time it hardly depends on what else the
// machine runs.
func processCPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(b)) {
			comm, err := os.ReadFile("/proc/" + pid + "/comm")
			if err != nil {
				continue
			}
			stat, err := os.ReadFile("/proc/" + pid + "/stat")
			if err != nil {
				continue
			}
			// Fields after the command (which is in parentheses): state is field 3,
			// utime and stime fields 14 and 15, in clock ticks of 1/100 s.
			rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if len(rest) < 13 {
				continue
			}
			ut, _ := strconv.ParseInt(rest[11], 10, 64)
			st, _ := strconv.ParseInt(rest[12], 10, 64)
			out[strings.TrimSpace(string(comm))] += time.Duration(ut+st) * 10 * time.Millisecond
		}
	}
	return out
}

// loadAvg is the machine's load average (1, 5, 15 minutes), or "?" off Linux.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// measure creates n pods in a new namespace, starts a scheduler, waits until all are
// bound and returns pods per second between the first and the last binding. With
// the plugin, it checks that no device is held twice.
func measure(t *testing.T, ctx context.Context, ns string, n int, spec podSpec, plugin bool, edit func(map[string]any), args ...string) float64 {
	t.Helper()
	namespace(t, ctx, ns)
	start := time.Now()
	parallel(t, n, func(i int) error {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, makePod(t, ns, fmt.Sprintf("p-%05d", i), spec), metav1.CreateOptions{})
		return err
	})
	t.Logf("%s: created %d pods in %s", ns, n, time.Since(start).Round(time.Millisecond))
	bound := map[string]bool{}
	var first, last time.Time
	var cpu0, cpu1 map[string]time.Duration
	see := func(p *corev1.Pod) {
		if p.Spec.NodeName == "" || bound[p.Name] {
			return
		}
		now := time.Now()
		if first.IsZero() {
			first = now
			cpu0 = processCPU()
		}
		last = now
		bound[p.Name] = true
	}
	list := func() string {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			see(&l.Items[i])
		}
		return l.ResourceVersion
	}
	rv := list()
	sched := startScheduler(t, edit, args...)
	deadline := time.Now().Add(time.Duration(n/5+120) * time.Second)
	// Watch from the list; the API server may end a watch at any time: list again and
	// watch on.
	for len(bound) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d pods bound before the timeout", ns, len(bound), n)
		}
		w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			rv = list()
			continue
		}
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				see(p)
				rv = p.ResourceVersion
			}
			if len(bound) == n || time.Now().After(deadline) {
				break
			}
		}
		w.Stop()
		if len(bound) < n {
			rv = list()
		}
	}
	cpu1 = processCPU()
	sched.stop()
	rate := float64(n-1) / last.Sub(first).Seconds()
	var cpu []string
	for _, name := range []string{"kube-scheduler", "kube-apiserver", "etcd"} {
		cpu = append(cpu, fmt.Sprintf("%s %.2f ms", name, float64((cpu1[name]-cpu0[name]).Microseconds())/1000/float64(n-1)))
	}
	t.Logf("%s: %d pods bound in %s from the first binding: %.1f pods/s; CPU per pod meanwhile: %s", ns, n, last.Sub(first).Round(time.Millisecond), rate, strings.Join(cpu, ", "))
	t.Logf("%s: load average %s", ns, loadAvg())
	if plugin {
		waitFor(t, ctx, time.Minute, "annotations", func(ctx context.Context) (bool, error) {
			pods := listPods(t, ctx, ns)
			return checkNoDeviceTwice(t, pods) == n, nil
		})
	}
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	return rate
}

// createNodesParallel creates nodes (see createNode) with 8 concurrent clients.
func createNodesParallel(t *testing.T, ctx context.Context, nodes []rdma.Node) {
	t.Helper()
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = cs.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{})
			_ = dyn.Resource(deviceGVR).Delete(context.Background(), n.Name, metav1.DeleteOptions{})
		}
	})
	parallel(t, len(nodes), func(i int) error { return createNode(ctx, nodes[i]) })
}

// parallel runs f(0..n-1) on 8 goroutines and fails the test on the first error.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
