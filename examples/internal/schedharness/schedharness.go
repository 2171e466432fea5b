// Package schedharness holds what the examples' tests need to run kube-scheduler
// with kplan's RDMA plugin against a test API server: koordinator's Device CRD,
// the scheduler module's checked-in RBAC and configuration, the scheduler process,
// and Node and Device objects built from rdma.Node inventories.
package schedharness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/examples/internal/testenv"
	"github.com/kplan-dev/kplan/rdma"
)

// KoordinatorModule is the koordinator release whose Device CRD the tests install.
const KoordinatorModule = "github.com/koordinator-sh/koordinator@v1.8.0"

// DeviceGVR is koordinator's Device resource, one object per node named after it.
var DeviceGVR = schema.GroupVersionResource{Group: "scheduling.koordinator.sh", Version: "v1alpha1", Resource: "devices"}

// SchedulerUser is the user the scheduler connects as; config/rbac.yaml grants it
// what the plugin reads and writes.
const SchedulerUser = "system:kube-scheduler"

// DeviceCRD returns the path of koordinator's Device CRD manifest in the Go module
// cache, downloading the module when needed.
func DeviceCRD(ctx context.Context) (string, error) {
	root, err := testenv.Root()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", KoordinatorModule)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w: %s %s", KoordinatorModule, err, out, stderr.String())
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", err
	}
	if mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", KoordinatorModule, mod.Error)
	}
	return filepath.Join(mod.Dir, "config", "crd", "bases", "scheduling.koordinator.sh_devices.yaml"), nil
}

// ApplyConfig creates the RBAC objects and ServiceAccounts of a file of the
// scheduler module's config directory (e.g. "rbac.yaml"), and returns a function
// deleting them.
func ApplyConfig(ctx context.Context, cs kubernetes.Interface, name string) (func(), error) {
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

// WriteConfig renders the checked-in KubeSchedulerConfiguration into dir: the
// kubeconfig (written beside it), leader election off, and edit applied to the
// whole configuration. It returns the configuration file's path.
func WriteConfig(dir string, kubeconfig []byte, edit func(cfg map[string]any)) (string, error) {
	root, err := testenv.Root()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, "scheduler", "config", "scheduler-config.yaml"))
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return "", err
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		return "", err
	}
	cfg["clientConnection"].(map[string]any)["kubeconfig"] = kc
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	if edit != nil {
		edit(cfg)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "scheduler-config.yaml")
	return p, os.WriteFile(p, out, 0o644)
}

// SetSchedulerName is an edit for WriteConfig naming the configuration's profile
// name, so that the scheduler places only the pods whose spec.schedulerName is
// name.
func SetSchedulerName(name string) func(cfg map[string]any) {
	return func(cfg map[string]any) {
		cfg["profiles"].([]any)[0].(map[string]any)["schedulerName"] = name
	}
}

// Scheduler is a running kube-scheduler process.
type Scheduler struct {
	// Log is the file holding its output.
	Log string

	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// StartScheduler starts the kube-scheduler binary bin with the configuration file
// config and extra command-line args, its output written to logPath.
func StartScheduler(bin, config, logPath string, args ...string) (*Scheduler, error) {
	s := &Scheduler{Log: logPath, done: make(chan struct{})}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, append([]string{"--config=" + config, "--secure-port=0", "-v=2"}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		_ = s.cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	return s, nil
}

// Done is closed once the scheduler has exited.
func (s *Scheduler) Done() <-chan struct{} { return s.done }

// Stop kills the scheduler (as a crash would) and waits for it to exit. It may be
// called more than once.
func (s *Scheduler) Stop() {
	s.once.Do(func() { _ = s.cmd.Process.Signal(syscall.SIGKILL) })
	<-s.done
}

// LogCount counts the scheduler log lines that contain every one of parts.
func (s *Scheduler) LogCount(parts ...string) int {
	b, _ := os.ReadFile(s.Log)
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

// Tail returns the last n lines of the scheduler's log.
func (s *Scheduler) Tail(n int) string {
	b, _ := os.ReadFile(s.Log)
	lines := strings.Split(string(b), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Shape describes a test node: Roots PCIe roots (NUMA node = root index), each
// with GPUs GPUs and PFs RDMA PFs, each PF with VFs VFs split evenly over VFGroups
// (none: PF mode). PFLabels label every PF.
type Shape struct {
	Roots, GPUs, PFs, VFs int
	VFGroups              []map[string]string
	PFLabels              map[string]string
}

func i32(v int) *int32 { x := int32(v); return &x }

// MakeNode builds a node's inventory of the given shape. Addresses are derived
// from the indices: PF k is 0000:<0x10+4k>:00.0 and its VF j
// 0000:<same bus>:<1+j/8>.<j%8>.
func MakeNode(name string, s Shape) rdma.Node {
	n := rdma.Node{Name: name}
	g, k := 0, 0
	for r := 0; r < s.Roots; r++ {
		root := fmt.Sprintf("pci0000:%02x", 0x10*(r+1))
		for i := 0; i < s.GPUs; i++ {
			n.Devices = append(n.Devices, rdma.DeviceInfo{
				UUID: fmt.Sprintf("GPU-%s-%d", name, g), Minor: i32(g), Type: rdma.GPU, Health: true,
				Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root, BusID: fmt.Sprintf("0000:%02x:00.0", 0x80+g)},
			})
			g++
		}
		for i := 0; i < s.PFs; i++ {
			bus := 0x10 + 4*k
			bdf := fmt.Sprintf("0000:%02x:00.0", bus)
			d := rdma.DeviceInfo{
				UUID: bdf, Minor: i32(k), Type: rdma.RDMA, Health: true, Labels: s.PFLabels,
				Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root, BusID: bdf},
			}
			groups := s.VFGroups
			if len(groups) == 0 && s.VFs > 0 {
				groups = []map[string]string{nil}
			}
			for gi, labels := range groups {
				grp := rdma.VirtualFunctionGroup{Labels: labels}
				per := s.VFs / len(groups)
				for j := gi * per; j < (gi+1)*per; j++ {
					grp.VFs = append(grp.VFs, rdma.VirtualFunction{Minor: int32(j), BusID: fmt.Sprintf("0000:%02x:%02x.%d", bus, 1+j/8, j%8)})
				}
				d.VFGroups = append(d.VFGroups, grp)
			}
			n.Devices = append(n.Devices, d)
			k++
		}
	}
	return n
}

// CreateNode creates a Node object (schedulable, Ready, with koordinator.sh/rdma
// and nvidia.com/gpu capacity as koordlet would report them) and its Device object.
func CreateNode(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, n rdma.Node) error {
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
	obj, err := DeviceObject(n)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(DeviceGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Device %s: %w", n.Name, err)
	}
	return CreateNodeObject(ctx, cs, n.Name, capacity)
}

// CreateNodeObject creates a schedulable, Ready Node with the given capacity (plus
// CPU, memory and pods).
func CreateNodeObject(ctx context.Context, cs kubernetes.Interface, name string, capacity corev1.ResourceList) error {
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

// DeviceObject is n as koordinator's Device object.
func DeviceObject(n rdma.Node) (*unstructured.Unstructured, error) {
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
