package schedulertest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kplan-dev/kplan/examples/internal/schedharness"
	"github.com/kplan-dev/kplan/examples/internal/testenv"
	"github.com/kplan-dev/kplan/rdma"
)

var deviceGVR = schedharness.DeviceGVR

var (
	env        *testenv.Env
	cs         kubernetes.Interface
	dyn        dynamic.Interface
	schedBin   string
	kubeconfig []byte // the scheduler's: user system:kube-scheduler
	setupErr   error
)

func TestMain(m *testing.M) {
	code := run(m)
	os.Exit(code)
}

func run(m *testing.M) int {
	ctx := context.Background()
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if testing.Short() {
		return m.Run()
	}
	var err error
	if schedBin, err = testenv.EnsureScheduler(ctx, os.Stderr); err != nil {
		setupErr = err
		return m.Run()
	}
	if env, err = testenv.Start(ctx, testenv.Options{}); err != nil {
		setupErr = err
		return m.Run()
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()
	setupErr = setup(ctx)
	return m.Run()
}

func setup(ctx context.Context) error {
	var err error
	if cs, err = kubernetes.NewForConfig(env.Config); err != nil {
		return err
	}
	if dyn, err = dynamic.NewForConfig(env.Config); err != nil {
		return err
	}
	crd, err := deviceCRD(ctx)
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{crd}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("install %s: %w", crd, err)
	}
	if err := applyRBAC(ctx); err != nil {
		return err
	}
	user, err := env.Environment().ControlPlane.AddUser(envtest.User{Name: schedharness.SchedulerUser}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err = user.KubeConfig()
	return err
}

// needEnv skips in -short mode and fails when the environment did not start.
func needEnv(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a kube-apiserver and kube-scheduler")
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

// deviceCRD returns the path of koordinator's Device CRD manifest in the Go module
// cache, downloading the module when needed.
func deviceCRD(ctx context.Context) (string, error) { return schedharness.DeviceCRD(ctx) }

// applyRBAC creates the objects of the checked-in RBAC (config/rbac.yaml).
func applyRBAC(ctx context.Context) error {
	_, err := applyConfig(ctx, "rbac.yaml")
	return err
}

// applyConfig creates the RBAC objects and ServiceAccounts of a file of the scheduler
// module's config directory, and returns a function deleting them.
func applyConfig(ctx context.Context, name string) (func(), error) {
	return schedharness.ApplyConfig(ctx, cs, name)
}

// scheduler is a running kube-scheduler process.
type scheduler struct {
	*schedharness.Scheduler
	done <-chan struct{}
}

// schedulerConfig renders the checked-in KubeSchedulerConfiguration for the test:
// the scheduler's kubeconfig, leader election off, and edit applied to the profile.
func schedulerConfig(t *testing.T, dir string, edit func(cfg map[string]any)) string {
	t.Helper()
	p, err := schedharness.WriteConfig(dir, kubeconfig, edit)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startScheduler starts kube-scheduler with the plugin and extra command-line args; it
// is stopped at the end of the test, and its log printed when the test failed.
func startScheduler(t *testing.T, edit func(cfg map[string]any), args ...string) *scheduler {
	t.Helper()
	dir := t.TempDir()
	cfg := schedulerConfig(t, dir, edit)
	h, err := schedharness.StartScheduler(schedBin, cfg, filepath.Join(dir, "scheduler.log"), args...)
	if err != nil {
		t.Fatal(err)
	}
	s := &scheduler{Scheduler: h, done: h.Done()}
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("scheduler log (last lines):\n%s", s.Tail(80))
		}
	})
	return s
}

// stop kills the scheduler (as a crash would) and waits for it to exit.
func (s *scheduler) stop() { s.Stop() }

// logCount counts the scheduler log lines that contain every one of parts.
func (s *scheduler) logCount(parts ...string) int { return s.LogCount(parts...) }

// testNode is a node of a test with its inventory.
type testNode struct {
	node rdma.Node
	inv  *rdma.Inventory
}

// createNodes creates the nodes (see createNode), deleted at the end of the test, and
// returns them with their inventories.
func createNodes(t *testing.T, ctx context.Context, nodes ...rdma.Node) map[string]*testNode {
	t.Helper()
	out := map[string]*testNode{}
	for _, n := range nodes {
		inv, err := rdma.NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		out[n.Name] = &testNode{node: n, inv: inv}
		name := n.Name
		t.Cleanup(func() {
			ctx := context.Background()
			_ = cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
			_ = dyn.Resource(deviceGVR).Delete(ctx, name, metav1.DeleteOptions{})
		})
		if err := createNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// createNode creates a Node object (schedulable, Ready, with koordinator.sh/rdma and
// nvidia.com/gpu capacity as koordlet would report them) and its Device object.
func createNode(ctx context.Context, n rdma.Node) error {
	return schedharness.CreateNode(ctx, cs, dyn, n)
}

// createNodeObject creates a schedulable, Ready Node with the given capacity (plus
// CPU, memory and pods).
func createNodeObject(ctx context.Context, name string, capacity corev1.ResourceList) error {
	return schedharness.CreateNodeObject(ctx, cs, name, capacity)
}

// deviceObject is n as koordinator's Device object.
func deviceObject(n rdma.Node) (*unstructured.Unstructured, error) {
	return schedharness.DeviceObject(n)
}

// namespaceRuns counts the namespaces created per name: envtest runs no namespace
// controller, so a deleted namespace never goes away, and a test run again (go test
// -count) gets name-2, name-3, ...
var namespaceRuns = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// namespace creates a namespace for the test (name, or name-<run> when the test runs
// again); its pods are deleted at the end.
func namespace(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	namespaceRuns.Lock()
	namespaceRuns.n[name]++
	if run := namespaceRuns.n[name]; run > 1 {
		name = fmt.Sprintf("%s-%d", name, run)
	}
	namespaceRuns.Unlock()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = cs.CoreV1().Pods(name).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	})
	return name
}

// startKubelets runs testenv's kubelet for the pods of namespace ns on each node
// until the test ends: the scheduler binds the pods, the kubelet runs them and
// removes a deleted one terminate after its deletion (within its grace period).
// Without one, a bound pod deleted with a grace period never goes away.
func startKubelets(t *testing.T, ctx context.Context, ns string, terminate time.Duration, nodes ...string) {
	t.Helper()
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		k, err := testenv.StartKubelet(ctx, c, testenv.KubeletOptions{Namespace: ns, Node: n, NoBind: true, TerminateDelay: terminate})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(k.Stop)
	}
}

// deletePod deletes a pod at once (grace period 0: most tests run no kubelet to
// wait for).
func deletePod(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 200 ms until it returns true or timeout passes.
func waitFor(t *testing.T, ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// scheduledCondition returns the pod's PodScheduled condition, if any.
func scheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
