package schedulertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/examples/internal/testenv"
	"github.com/kplan-dev/kplan/rdma"
)

// koordinatorModule is the koordinator release whose Device CRD the tests install.
const koordinatorModule = "github.com/koordinator-sh/koordinator@v1.8.0"

var deviceGVR = schema.GroupVersionResource{Group: "scheduling.koordinator.sh", Version: "v1alpha1", Resource: "devices"}

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
	user, err := env.Environment().ControlPlane.AddUser(envtest.User{Name: "system:kube-scheduler"}, nil)
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
func deviceCRD(ctx context.Context) (string, error) {
	root, err := testenv.Root()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", koordinatorModule)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w: %s %s", koordinatorModule, err, out, stderr.String())
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", err
	}
	if mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", koordinatorModule, mod.Error)
	}
	return filepath.Join(mod.Dir, "config", "crd", "bases", "scheduling.koordinator.sh_devices.yaml"), nil
}

// applyRBAC creates the objects of the checked-in RBAC (config/rbac.yaml).
func applyRBAC(ctx context.Context) error {
	_, err := applyConfig(ctx, "rbac.yaml")
	return err
}

// applyConfig creates the RBAC objects and ServiceAccounts of a file of the scheduler
// module's config directory, and returns a function deleting them.
func applyConfig(ctx context.Context, name string) (func(), error) {
	root, err := testenv.Root()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(root, "scheduler", "config", name))
	if err != nil {
		return nil, err
	}
	var undo []func()
	cleanup := func() {
		for _, u := range slices.Backward(undo) {
			u()
		}
	}
	create := func(doc []byte, kind string) error {
		bg := context.Background()
		var err error
		switch kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err = yaml.UnmarshalStrict(doc, &r); err == nil {
				_, err = cs.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{})
				undo = append(undo, func() { _ = cs.RbacV1().ClusterRoles().Delete(bg, r.Name, metav1.DeleteOptions{}) })
			}
		case "ClusterRoleBinding":
			var r rbacv1.ClusterRoleBinding
			if err = yaml.UnmarshalStrict(doc, &r); err == nil {
				_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &r, metav1.CreateOptions{})
				undo = append(undo, func() { _ = cs.RbacV1().ClusterRoleBindings().Delete(bg, r.Name, metav1.DeleteOptions{}) })
			}
		case "Role":
			var r rbacv1.Role
			if err = yaml.UnmarshalStrict(doc, &r); err == nil {
				_, err = cs.RbacV1().Roles(r.Namespace).Create(ctx, &r, metav1.CreateOptions{})
				undo = append(undo, func() { _ = cs.RbacV1().Roles(r.Namespace).Delete(bg, r.Name, metav1.DeleteOptions{}) })
			}
		case "RoleBinding":
			var r rbacv1.RoleBinding
			if err = yaml.UnmarshalStrict(doc, &r); err == nil {
				_, err = cs.RbacV1().RoleBindings(r.Namespace).Create(ctx, &r, metav1.CreateOptions{})
				undo = append(undo, func() { _ = cs.RbacV1().RoleBindings(r.Namespace).Delete(bg, r.Name, metav1.DeleteOptions{}) })
			}
		case "ServiceAccount":
			var r corev1.ServiceAccount
			if err = yaml.UnmarshalStrict(doc, &r); err == nil {
				_, err = cs.CoreV1().ServiceAccounts(r.Namespace).Create(ctx, &r, metav1.CreateOptions{})
				undo = append(undo, func() { _ = cs.CoreV1().ServiceAccounts(r.Namespace).Delete(bg, r.Name, metav1.DeleteOptions{}) })
			}
		case "":
		default:
			return fmt.Errorf("%s: unexpected kind %q", name, kind)
		}
		return err
	}
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return cleanup, nil
		}
		if err != nil {
			cleanup()
			return nil, err
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			cleanup()
			return nil, err
		}
		if err := create(doc, meta.Kind); err != nil {
			cleanup()
			return nil, fmt.Errorf("%s: %s: %w", name, meta.Kind, err)
		}
	}
}

// scheduler is a running kube-scheduler process.
type scheduler struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	once sync.Once
}

// schedulerConfig renders the checked-in KubeSchedulerConfiguration for the test:
// the scheduler's kubeconfig, leader election off, and edit applied to the profile.
func schedulerConfig(t *testing.T, dir string, edit func(cfg map[string]any)) string {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "scheduler", "config", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg["clientConnection"].(map[string]any)["kubeconfig"] = kc
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	if edit != nil {
		edit(cfg)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(p, out, 0o644); err != nil {
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
	s := &scheduler{log: filepath.Join(dir, "scheduler.log"), done: make(chan struct{})}
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(schedBin, append([]string{"--config=" + cfg, "--secure-port=0", "-v=2"}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = s.cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			b, _ := os.ReadFile(s.log)
			lines := strings.Split(string(b), "\n")
			if len(lines) > 80 {
				lines = lines[len(lines)-80:]
			}
			t.Logf("scheduler log (last lines):\n%s", strings.Join(lines, "\n"))
		}
	})
	return s
}

// stop kills the scheduler (as a crash would) and waits for it to exit.
func (s *scheduler) stop() {
	s.once.Do(func() { _ = s.cmd.Process.Signal(syscall.SIGKILL) })
	<-s.done
}

// logCount counts the scheduler log lines that contain every one of parts.
func (s *scheduler) logCount(parts ...string) int {
	b, _ := os.ReadFile(s.log)
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		all := true
		for _, p := range parts {
			if !strings.Contains(line, p) {
				all = false
				break
			}
		}
		if all {
			n++
		}
	}
	return n
}

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
	inv, err := rdma.NewInventory(n)
	if err != nil {
		return err
	}
	capacity, err := rdma.Capacity(inv, rdma.CountModel)
	if err != nil {
		return err
	}
	gpus := 0
	for _, d := range n.Devices {
		if d.Type == rdma.GPU {
			gpus++
		}
	}
	capacity[rdma.ResourceNvidiaGPU] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	obj, err := deviceObject(n)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(deviceGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Device %s: %w", n.Name, err)
	}
	return createNodeObject(ctx, n.Name, capacity)
}

// createNodeObject creates a schedulable, Ready Node with the given capacity (plus
// CPU, memory and pods).
func createNodeObject(ctx context.Context, name string, capacity corev1.ResourceList) error {
	capacity = capacity.DeepCopy()
	if capacity == nil {
		capacity = corev1.ResourceList{}
	}
	capacity[corev1.ResourceCPU] = resource.MustParse("64")
	capacity[corev1.ResourceMemory] = resource.MustParse("256Gi")
	capacity[corev1.ResourcePods] = resource.MustParse("110")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create Node %s: %w", name, err)
	}
	// The API server's admission taints new nodes not-ready; no node controller runs
	// here to lift it.
	created.Spec.Taints = nil
	if created, err = cs.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		return err
	}
	created.Status.Capacity = capacity
	created.Status.Allocatable = capacity
	created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// deviceObject is n as koordinator's Device object.
func deviceObject(n rdma.Node) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(n.Devices)
	if err != nil {
		return nil, err
	}
	var devices []any
	if err := json.Unmarshal(b, &devices); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.koordinator.sh/v1alpha1",
		"kind":       "Device",
		"metadata":   map[string]any{"name": n.Name},
		"spec":       map[string]any{"devices": devices},
	}}, nil
}

// namespace creates a namespace for the test; its pods are deleted at the end.
func namespace(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
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
