package clustertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/clustertest"
	"github.com/kplan-dev/kplan/examples/internal/testenv"
	"github.com/kplan-dev/kplan/ranktable"
)

// groupTemplate is the library's group-level template (vLLM-Ascend): a
// LeaderWorkerSet's groups have no roles.
const groupTemplate = "ascend-ranktable-template-vllm-group"

// TestRanktablesBesideLWS runs kplan's operator (--ranktable-owner=leaderworkerset
// and disaggregatedset) beside the real LWS controller, with the test playing the
// kubelet and the Ascend device plugin: a pod's engine starts only when the table
// it mounts is complete and lists the pod's own server.
//
//   - A LeaderWorkerSet of 2 groups of 4, annotated with a group-level template,
//     gets one complete table per group (<lws>-<group index>-ranktable), mounted by
//     each group's pods, byte-identical to what
//     `kplan ranktable --configmaps` computes from the same LeaderWorkerSet and pods.
//     kplan's webhook configuration sorts before LWS's, so a leader pod reaches it
//     first without its group labels (LWS's pod webhook sets them): it mounts its
//     table only because the API server calls kplan's webhook again.
//   - A rolling update (a new image) replaces both groups; each ends with a
//     complete table of its new pods, and at every pod event no table lists servers
//     of two revisions or of another group, and no Ready pod's table leaves it out.
//     Meanwhile the operator sends no GET or LIST of LeaderWorkerSets: its
//     controller and webhook read the set from its cache.
//   - A DisaggregatedSet (prefill and decode, one replica of 2 each) gets a table
//     per role replica, each listing only its role's servers.
func TestRanktablesBesideLWS(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, ctx, "lws-rt")
	dp := startDevicePlugin(t, ctx, ns)
	kubelet(t, ns).SetAllow(func(p *corev1.Pod) bool { return mountedTable(p) == "" || dp.tableLists(ctx, p) })
	// A complete table lists the whole group: 4 pods of the LeaderWorkerSet, 2 of a
	// DisaggregatedSet's role replica.
	inv := watchTables(t, ctx, ns, dp, func(p *corev1.Pod) int {
		if p.Labels[clustertest.LabelDisaggregatedSetRole] != "" {
			return 2
		}
		return 4
	})

	const name, replicas, size = "serve", 2, 4
	lws := lwsObject(ns, name, replicas, size, "engine:v1", nil)
	lws.SetAnnotations(map[string]string{ranktable.AnnotationTemplate: groupTemplate})
	if err := cluster.Client.Create(ctx, lws); err != nil {
		t.Fatal(err)
	}
	waitGroupsServed(t, ctx, ns, name, dp, "engine:v1", replicas, size)

	t.Run("tables equal kplan ranktable's", func(t *testing.T) {
		got := map[string]map[string]string{}
		for g := range replicas {
			var cm corev1.ConfigMap
			cmName := fmt.Sprintf("%s-%d-ranktable", name, g)
			if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: cmName}, &cm); err != nil {
				t.Fatal(err)
			}
			got[cmName] = cm.Data
		}
		want := cliTables(t, ctx, ns, name)
		if len(want) != replicas {
			t.Fatalf("kplan ranktable planned %d tables, want %d: %v", len(want), replicas, want)
		}
		for n, data := range want {
			if !mapsEqual(got[n], data) {
				t.Errorf("ConfigMap %s:\n%v\nkplan ranktable:\n%v", n, got[n], data)
			}
		}
	})

	t.Run("a rolling update regenerates every group's table, never mixing revisions", func(t *testing.T) {
		var cur unstructured.Unstructured
		cur.SetGroupVersionKind(clustertest.LeaderWorkerSetGVK)
		if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &cur); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(cur.Object, []any{map[string]any{"name": "main", "image": "engine:v2"}},
			"spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers"); err != nil {
			t.Fatal(err)
		}
		lwsReads.Take()
		if err := cluster.Client.Update(ctx, &cur); err != nil {
			t.Fatal(err)
		}
		waitGroupsServed(t, ctx, ns, name, dp, "engine:v2", replicas, size)
		// The LeaderWorkerSet is in the operator's cache: the webhook (every new
		// pod, twice for a leader) and the controller (every pod event) read it
		// there.
		if gets, lists := lwsReads.Take(); gets != 0 || lists != 0 {
			t.Errorf("during the rolling update the operator sent %d GETs and %d LISTs of LeaderWorkerSets to the API server, want none", gets, lists)
		}
		if v := inv.violations(); len(v) > 0 {
			t.Errorf("%d violations at pod events, first: %s", len(v), strings.Join(v[:min(len(v), 5)], "\n"))
		}
		if inv.checked() == 0 {
			t.Error("no Ready pod event was checked")
		}
		t.Logf("%d pod events checked", inv.checked())
	})

	t.Run("a DisaggregatedSet gets a table per role replica", func(t *testing.T) {
		const ds = "pd"
		obj := dsObject(ns, ds, "engine:v1", dsRole{name: "prefill", replicas: 1, size: 2}, dsRole{name: "decode", replicas: 1, size: 2})
		obj.SetAnnotations(map[string]string{ranktable.AnnotationTemplate: groupTemplate})
		if err := cluster.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		eventually(t, ctx, 60*time.Second, "2 complete tables, one per role, every pod Ready", func(ctx context.Context) (bool, string, error) {
			pods, err := listPods(ctx, ns, client.MatchingLabels{clustertest.LabelDisaggregatedSetName: ds})
			if err != nil {
				return false, "", err
			}
			tables := map[string]string{} // ConfigMap -> role of its pods
			ready := 0
			for i := range pods {
				p := &pods[i]
				if podReady(p) {
					ready++
				}
				cm := mountedTable(p)
				if cm == "" {
					return false, "pod " + p.Name + " mounts no table", nil
				}
				if r, ok := tables[cm]; ok && r != p.Labels[clustertest.LabelDisaggregatedSetRole] {
					return false, "", fmt.Errorf("table %s is mounted by pods of roles %s and %s", cm, r, p.Labels[clustertest.LabelDisaggregatedSetRole])
				}
				tables[cm] = p.Labels[clustertest.LabelDisaggregatedSetRole]
			}
			return len(pods) == 4 && ready == 4 && len(tables) == 2, fmt.Sprintf("tables %v%s", tables, describePods(pods, clustertest.LabelDisaggregatedSetRole, clustertest.LabelGroupKey)), nil
		})
		pods, err := listPods(ctx, ns, client.MatchingLabels{clustertest.LabelDisaggregatedSetName: ds})
		if err != nil {
			t.Fatal(err)
		}
		for i := range pods {
			servers := dp.tableServers(ctx, &pods[i])
			if len(servers) != 2 {
				t.Errorf("pod %s: table lists %d servers, want its role replica's 2", pods[i].Name, len(servers))
			}
			for _, s := range servers {
				if info := dp.info(s); info.role != pods[i].Labels[clustertest.LabelDisaggregatedSetRole] {
					t.Errorf("pod %s (role %s): its table lists server %s of pod %s, role %q", pods[i].Name,
						pods[i].Labels[clustertest.LabelDisaggregatedSetRole], s, info.pod, info.role)
				}
			}
		}
	})
}

// waitGroupsServed waits until the LeaderWorkerSet's replicas*size pods all run
// image and are Ready, and each group's table lists exactly its pods' servers.
func waitGroupsServed(t *testing.T, ctx context.Context, ns, name string, dp *devicePlugin, image string, replicas, size int) {
	t.Helper()
	eventually(t, ctx, 90*time.Second, "every pod of "+image+" Ready with its group's complete table", func(ctx context.Context) (bool, string, error) {
		pods, err := listPods(ctx, ns, client.MatchingLabels{clustertest.LabelName: name})
		if err != nil {
			return false, "", err
		}
		if len(pods) != replicas*size {
			return false, describePods(pods, clustertest.LabelGroupIndex), nil
		}
		byGroup := map[string][]string{}
		for i := range pods {
			p := &pods[i]
			if !podReady(p) || p.Spec.Containers[0].Image != image {
				return false, describePods(pods, clustertest.LabelGroupIndex), nil
			}
			if want := fmt.Sprintf("%s-%s-ranktable", name, p.Labels[clustertest.LabelGroupIndex]); mountedTable(p) != want {
				return false, "", fmt.Errorf("pod %s mounts %q, want %s", p.Name, mountedTable(p), want)
			}
			byGroup[mountedTable(p)] = append(byGroup[mountedTable(p)], dp.server(p.UID))
		}
		for cm, servers := range byGroup {
			var tcm corev1.ConfigMap
			if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: cm}, &tcm); err != nil {
				return false, "", err
			}
			tab, ok := parseTable(tcm.Data[ranktable.DefaultFilename])
			got := tab.servers()
			slices.Sort(got)
			slices.Sort(servers)
			if !ok || tab.Status != ranktable.StatusCompleted || !slices.Equal(got, servers) {
				return false, fmt.Sprintf("table %s lists %v (status %q), its pods have %v", cm, got, tab.Status, servers), nil
			}
		}
		return true, "", nil
	})
}

// cliTables runs `kplan ranktable --configmaps` on the LeaderWorkerSet and its pods
// as kubectl prints them, and returns the data of each ConfigMap it would write.
func cliTables(t *testing.T, ctx context.Context, ns, name string) map[string]map[string]string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "kplan")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "../cmd/kplan")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build kplan: %v\n%s", err, out)
	}
	var lws unstructured.Unstructured
	lws.SetGroupVersionKind(clustertest.LeaderWorkerSetGVK)
	if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &lws); err != nil {
		t.Fatal(err)
	}
	pods, err := listPods(ctx, ns, client.MatchingLabels{clustertest.LabelName: name})
	if err != nil {
		t.Fatal(err)
	}
	list := map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{}}
	items := []any{}
	for i := range pods {
		p := pods[i].DeepCopy()
		p.APIVersion, p.Kind = "v1", "Pod"
		items = append(items, p)
	}
	list["items"] = items
	write := func(file string, v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cmd := exec.CommandContext(ctx, bin, "ranktable", "--configmaps", "-o", "json", "-f", write("lws.json", lws.Object), "-f", write("pods.json", list))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kplan ranktable: %v\n%s", err, stderr.String())
	}
	var out struct {
		Items []corev1.ConfigMap `json:"items"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("kplan ranktable output: %v\n%s", err, stdout.String())
	}
	tables := map[string]map[string]string{}
	for _, cm := range out.Items {
		tables[cm.Name] = cm.Data
	}
	return tables
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// kubelet is the kubelet newNamespace started for ns.
func kubelet(t *testing.T, ns string) *testenv.Kubelet {
	t.Helper()
	k, ok := kubelets.Load(ns)
	if !ok {
		t.Fatalf("no kubelet for namespace %s", ns)
	}
	return k.(*testenv.Kubelet)
}

// rankTable is the part of a rank table the tests read.
type rankTable struct {
	Status     string `json:"status"`
	ServerList []struct {
		ServerID string `json:"server_id"`
	} `json:"server_list"`
}

func (r rankTable) servers() []string {
	out := []string{}
	for _, s := range r.ServerList {
		out = append(out, s.ServerID)
	}
	return out
}

func parseTable(s string) (rankTable, bool) {
	var r rankTable
	return r, s != "" && json.Unmarshal([]byte(s), &r) == nil
}

// mountedTable is the name of the ranktable ConfigMap a pod mounts ("" for none).
func mountedTable(p *corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.Name == ranktable.VolumeName && v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return ""
}

// serverInfo is what the device plugin knew of the pod it gave a server.
type serverInfo struct {
	pod, revision, group, role string
}

// devicePlugin is testenv's device plugin, with what it knew of each server's pod.
type devicePlugin struct{ *testenv.DevicePlugin }

func startDevicePlugin(t *testing.T, ctx context.Context, ns string) *devicePlugin {
	dp, stop := testenv.StartDevicePlugin(ctx, cluster.Client, ns)
	t.Cleanup(stop)
	return &devicePlugin{dp}
}

func (dp *devicePlugin) server(uid types.UID) string { return dp.Server(uid) }

func (dp *devicePlugin) info(server string) serverInfo {
	p := dp.Pod(server)
	if p == nil {
		return serverInfo{}
	}
	return serverInfo{pod: p.Name, revision: p.Labels[clustertest.LabelTemplateRevisionHash],
		group: p.Labels[clustertest.LabelGroupKey], role: p.Labels[clustertest.LabelDisaggregatedSetRole]}
}

// tableServers reads the table p mounts and returns its servers when complete.
func (dp *devicePlugin) tableServers(ctx context.Context, p *corev1.Pod) []string {
	var cm corev1.ConfigMap
	if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: mountedTable(p)}, &cm); err != nil {
		return nil
	}
	tab, ok := parseTable(cm.Data[ranktable.DefaultFilename])
	if !ok || tab.Status != ranktable.StatusCompleted {
		return nil
	}
	return tab.servers()
}

// tableLists reports whether the table p mounts is complete and lists p's own
// server: what the engine's wait container checks before the engine starts.
func (dp *devicePlugin) tableLists(ctx context.Context, p *corev1.Pod) bool {
	own := dp.server(p.UID)
	return own != "" && slices.Contains(dp.tableServers(ctx, p), own)
}

// tableInvariant checks, at every pod event of a namespace, the table the pod
// mounts: a complete table lists the group's size of servers, of one revision and
// one group only, and a
// Ready pod (still Ready, and not being deleted, when read again) is in its table.
type tableInvariant struct {
	size func(*corev1.Pod) int

	mu     sync.Mutex
	errs   []string
	events int
}

func watchTables(t *testing.T, ctx context.Context, ns string, dp *devicePlugin, size func(*corev1.Pod) int) *tableInvariant {
	t.Helper()
	wc, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: cluster.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	inv := &tableInvariant{size: size}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || mountedTable(p) == "" {
				continue
			}
			inv.check(ctx, dp, p)
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return inv
}

func (inv *tableInvariant) check(ctx context.Context, dp *devicePlugin, p *corev1.Pod) {
	servers := dp.tableServers(ctx, p)
	var errs []string
	revs, groups := map[string]bool{}, map[string]bool{}
	for _, s := range servers {
		info := dp.info(s)
		revs[info.revision], groups[info.group] = true, true
	}
	if len(servers) > 0 && len(servers) != inv.size(p) {
		errs = append(errs, fmt.Sprintf("pod %s: complete table %s lists %d servers, its group has %d pods", p.Name, mountedTable(p), len(servers), inv.size(p)))
	}
	if len(revs) > 1 || len(groups) > 1 {
		errs = append(errs, fmt.Sprintf("pod %s: table %s lists servers of revisions %v and groups %v", p.Name, mountedTable(p), keys(revs), keys(groups)))
	}
	if podReady(p) && !slices.Contains(servers, dp.server(p.UID)) {
		var now corev1.Pod
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(p), &now); err == nil && now.UID == p.UID && podReady(&now) &&
			!slices.Contains(dp.tableServers(ctx, &now), dp.server(p.UID)) {
			errs = append(errs, fmt.Sprintf("pod %s is Ready, its table %s does not list it (%v)", p.Name, mountedTable(p), servers))
		}
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if podReady(p) {
		inv.events++
	}
	inv.errs = append(inv.errs, errs...)
}

func (inv *tableInvariant) violations() []string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return slices.Clone(inv.errs)
}

func (inv *tableInvariant) checked() int {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.events
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
