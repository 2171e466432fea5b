package operator_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/examples/operator"
	"github.com/kplan-dev/kplan/examples/operator/configmapset"
	"github.com/kplan-dev/kplan/ranktable"
)

// TestOperatorCachesOnlyWhatItReconciles: a cache built with operator.CacheOptions
// holds, of ConfigMaps, only rank tables and hubs (and templates in the templates
// namespace), of pods only ModelServing pods, and no managedFields: a tenant's large
// ConfigMaps and pods never enter the operator's memory.
func TestOperatorCachesOnlyWhatItReconciles(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	big := strings.Repeat("x", 256<<10)
	for i := range 4 {
		if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("unrelated-%d", i)},
			Data: map[string]string{"blob": big}}); err != nil {
			t.Fatal(err)
		}
	}
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a-hub",
		Labels: map[string]string{ranktable.LabelComponent: configmapset.ComponentHub}}}
	unlabeledTemplate := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ranktable.DefaultTemplateNamespace, Name: "unlabeled-" + ns}}
	msPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm-worker-0-0", Labels: map[string]string{servingv1.LabelName: "llm"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}}}
	tenantPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant", Annotations: map[string]string{"big": big[:200<<10]}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}}}
	for _, o := range []client.Object{owned, unlabeledTemplate, msPod, tenantPod} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, unlabeledTemplate) })

	opts := operator.CacheOptions(operator.Options{})
	opts.Scheme = scheme
	c, err := cache.New(operCfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(cctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, "the cache starts", func() error { return c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)) })

	names := func(list client.ObjectList) []string {
		var out []string
		switch l := list.(type) {
		case *corev1.ConfigMapList:
			for _, o := range l.Items {
				out = append(out, o.Name)
				if o.ManagedFields != nil {
					t.Errorf("cached ConfigMap %s keeps its managedFields", o.Name)
				}
			}
		case *corev1.PodList:
			for _, o := range l.Items {
				out = append(out, o.Name)
				if o.ManagedFields != nil {
					t.Errorf("cached pod %s keeps its managedFields", o.Name)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if got := names(&cms); !slices.Equal(got, []string{"a-hub"}) {
		t.Errorf("cached ConfigMaps of the namespace: %v, want only the hub", got)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if got := names(&pods); !slices.Equal(got, []string{msPod.Name}) {
		t.Errorf("cached pods of the namespace: %v, want only the ModelServing pod", got)
	}
	var templates corev1.ConfigMapList
	if err := c.List(ctx, &templates, client.InNamespace(ranktable.DefaultTemplateNamespace)); err != nil {
		t.Fatal(err)
	}
	got := names(&templates)
	if slices.Contains(got, unlabeledTemplate.Name) {
		t.Errorf("the cache holds the unlabeled ConfigMap %s of the templates namespace", unlabeledTemplate.Name)
	}
	if !slices.Contains(got, ranktable.LibraryMindIERole) {
		t.Errorf("the cache misses the library template %s: %v", ranktable.LibraryMindIERole, got)
	}

	// A foreign ranktable owner, read as an unstructured object (Setup keeps an
	// informer of its kind), is cached without its managedFields too.
	newLWS(t, ns, "lws", ranktable.LibraryVLLMGroup, 1, 1)
	key := client.ObjectKey{Namespace: ns, Name: "lws"}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(owners.LeaderWorkerSet.GVK)
	if err := admin.Get(ctx, key, stored); err != nil || stored.GetManagedFields() == nil {
		t.Fatalf("the API server's LeaderWorkerSet: %v, managedFields %v", err, stored.GetManagedFields())
	}
	cached := &unstructured.Unstructured{}
	cached.SetGroupVersionKind(owners.LeaderWorkerSet.GVK)
	eventually(t, "the cache has the LeaderWorkerSet", func() error { return c.Get(ctx, key, cached) })
	if cached.GetManagedFields() != nil {
		t.Errorf("the cached LeaderWorkerSet keeps its managedFields")
	}
}

// TestOperatorMemoryUnrelatedConfigMaps measures the operator's heap with many large
// ConfigMaps it has nothing to do with in the cluster, with its cache options and
// with a cache of everything (controller-runtime's default, what the operator used
// before). KPLAN_MEMORY_CONFIGMAPS=<n> runs it (skipped otherwise), with
// KPLAN_MEMORY_CONFIGMAP_KIB (default 1023) per ConfigMap. The operator runs in this
// process: the heap is measured after a GC before it starts and once its caches
// synced.
func TestOperatorMemoryUnrelatedConfigMaps(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KPLAN_MEMORY_CONFIGMAPS"))
	if n <= 0 {
		t.Skip("set KPLAN_MEMORY_CONFIGMAPS=<n> to run")
	}
	kib := 1023
	if v, err := strconv.Atoi(os.Getenv("KPLAN_MEMORY_CONFIGMAP_KIB")); err == nil && v > 0 {
		kib = v
	}
	ctx := context.Background()
	ns := newNamespace(t)
	start := time.Now()
	createConfigMaps(t, ns, n, kib<<10)
	t.Logf("created %d ConfigMaps of %d KiB in %s", n, kib, time.Since(start).Round(time.Second))

	restricted := operator.CacheOptions(operator.Options{})
	withOps, withCMs := measureOperatorHeap(t, ctx, restricted)
	withoutOps, withoutCMs := measureOperatorHeap(t, ctx, cache.Options{})
	t.Logf("operator heap growth with %d unrelated %d KiB ConfigMaps (%d MiB): with CacheOptions %.1f MiB (%d ConfigMaps cached), with a cache of everything %.1f MiB (%d cached)",
		n, kib, n*kib>>10, mib(withOps), withCMs, mib(withoutOps), withoutCMs)
	if limit := int64(32 << 20); withOps > limit {
		t.Errorf("with CacheOptions the heap grew by %.1f MiB, more than %.0f MiB", mib(withOps), mib(limit))
	}
	if withoutOps < int64(n*kib<<10)/2 {
		t.Errorf("a cache of everything grew the heap by only %.1f MiB: the measurement does not see the ConfigMaps", mib(withoutOps))
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// createConfigMaps creates n ConfigMaps of size bytes in ns, eight at a time.
func createConfigMaps(t *testing.T, ns string, n, size int) {
	t.Helper()
	blob := strings.Repeat("x", size)
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("blob-%05d", i)}, Data: map[string]string{"blob": blob}}
				if err := admin.Create(context.Background(), cm); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// measureOperatorHeap starts the operator (every controller, webhook server off) as
// its ServiceAccount with the cache options, waits until its ConfigMap informer has
// synced, and returns how much the heap grew and how many ConfigMaps it caches.
func measureOperatorHeap(t *testing.T, ctx context.Context, opts cache.Options) (int64, int) {
	t.Helper()
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	mgr, err := ctrl.NewManager(operCfg, ctrl.Options{
		Scheme: scheme, Cache: opts, Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Port: -1}), Controller: ctrlConfig(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := operator.Setup(mgr, operator.Options{}); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() { cancel(); <-done }()
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(10*time.Minute, func() error {
		if !inf.HasSynced() {
			return fmt.Errorf("ConfigMap informer not synced")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	grown := heap() - before
	var cms corev1.ConfigMapList
	if err := mgr.GetCache().List(ctx, &cms, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	return grown, len(cms.Items)
}

// TestSetupRefusesAnOwnerKindNotServed: an owner kind the API server does not serve
// (its CRD not installed) stops Setup with an error naming the kind, before the
// manager starts, rather than a controller that never syncs.
func TestSetupRefusesAnOwnerKindNotServed(t *testing.T) {
	mgr, err := ctrl.NewManager(operCfg, ctrl.Options{
		Scheme: scheme, Cache: operator.CacheOptions(operator.Options{}), Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Port: -1}), Controller: ctrlConfig(),
	})
	if err != nil {
		t.Fatal(err)
	}
	kind, err := owners.Parse("example.com/v1/Absent,owner-label=example.com/name")
	if err != nil {
		t.Fatal(err)
	}
	err = operator.Setup(mgr, operator.Options{RanktableOwners: []owners.Preset{kind}})
	if err == nil || !strings.Contains(err.Error(), "example.com/v1, Kind=Absent") {
		t.Fatalf("Setup: %v, want an error naming example.com/v1, Kind=Absent", err)
	}
	if !strings.Contains(err.Error(), "no matches for kind") {
		t.Errorf("Setup: %v, want the API server's reason (no matches for kind)", err)
	}
}
