package operator_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"

	"github.com/kplan-dev/kplan/examples/reload"
	"github.com/kplan-dev/kplan/revision"
)

// runAgentEnv makes the test binary run the reload agent instead of the tests: the
// agent runs as its own process, as the sidecar does in a pod.
const runAgentEnv = "KPLAN_TEST_RUN_RELOAD_AGENT"

func runAgent() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := []string{"-poll", "200ms"}
	if root := os.Getenv(agentProcEnv); root != "" {
		args = append(args, "-proc", root)
	}
	return reload.Main(ctx, args, os.Getenv, os.Stderr)
}

// agentKubeconfig applies config/reload/role.yaml for the set and the
// ServiceAccount ns/sa (once), and writes a kubeconfig holding a token of that
// ServiceAccount bound to the pod, as the kubelet mounts into the pod's containers:
// the API server sees the pod's name and UID in its claims, which the policy
// configmapset-reload-agent checks.
func agentKubeconfig(t *testing.T, ns, sa, set, pod string) string {
	t.Helper()
	applyReloadRole(t, ns, sa, set)
	return kubeconfigFor(t, boundToken(t, ns, sa, pod))
}

// applyReloadRole applies config/reload/role.yaml for the set and the
// ServiceAccount ns/sa, and creates the ServiceAccount; objects that exist are kept.
func applyReloadRole(t *testing.T, ns, sa, set string) {
	t.Helper()
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join("..", "config", "reload", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), "role.yaml")
	text := strings.NewReplacer("NAMESPACE", ns, "SERVICEACCOUNT", sa, "SETNAME", set).Replace(string(raw))
	if err := os.WriteFile(manifest, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := readManifests(manifest)
	if err != nil {
		t.Fatal(err)
	}
	objs = append(objs, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("applying config/reload: %v", err)
		}
	}
}

// boundToken returns a token of the ServiceAccount ns/sa bound to the pod ns/pod
// (TokenRequest with the pod as bound object, as the kubelet requests it).
func boundToken(t *testing.T, ns, sa, pod string) string {
	t.Helper()
	ctx := context.Background()
	var p corev1.Pod
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod}, &p); err != nil {
		t.Fatal(err)
	}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		ExpirationSeconds: ptr(int64(3600)),
		BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
	}}
	if err := admin.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}, tr); err != nil {
		t.Fatalf("token of %s/%s bound to pod %s: %v", ns, sa, pod, err)
	}
	return tr.Status.Token
}

// kubeconfigFor writes a kubeconfig for the API server authenticating with token.
func kubeconfigFor(t *testing.T, token string) string {
	t.Helper()
	c := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["agent"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "agent"}
	kc.CurrentContext = "agent"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubelet plays the kubelet for one pod whose reload sidecar is the agent, run as a
// process: it resolves the sidecar's environment from the pod as the downward API
// does (at each container start), maps the sidecar's data volume to a directory,
// keeps the pod's container statuses and readiness, and restarts the agent when it
// exits, as the kubelet restarts a native sidecar. It is not testenv's kubelet: it
// runs a real process per pod and writes the start times the revision protocol
// reads; nothing deletes these pods, so they stay unbound.
type kubelet struct {
	t          *testing.T
	ns, pod    string
	set        string
	dir        string // the emptyDir, as the sidecar's data directory
	hubFile    string // the hub volume's file
	kubeconfig string

	mu       sync.Mutex
	starts   int
	log      bytes.Buffer
	stopped  bool
	cmd      *exec.Cmd
	stopOnce sync.Once
	done     chan struct{}
}

// startKubelet starts the pod's containers and keeps the agent running until the test
// ends.
func startKubelet(t *testing.T, ns, pod, set, kubeconfig string) *kubelet {
	t.Helper()
	k := &kubelet{t: t, ns: ns, pod: pod, set: set, dir: t.TempDir(), kubeconfig: kubeconfig, done: make(chan struct{})}
	k.hubFile = filepath.Join(t.TempDir(), revision.HubDataKey) // never projected: the agent reads the API
	go k.loop()
	t.Cleanup(k.stop)
	return k
}

func (k *kubelet) stop() {
	k.stopOnce.Do(func() {
		k.mu.Lock()
		k.stopped = true
		cmd := k.cmd
		k.mu.Unlock()
		if cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		<-k.done
		if k.t.Failed() {
			k.t.Logf("agent log of pod %s:\n%s", k.pod, k.logs())
		}
	})
}

func (k *kubelet) logs() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.log.String()
}

func (k *kubelet) restarts() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.starts - 1
}

func (k *kubelet) loop() {
	defer close(k.done)
	for {
		k.mu.Lock()
		stopped := k.stopped
		k.mu.Unlock()
		if stopped {
			return
		}
		if err := k.runOnce(); err != nil {
			k.mu.Lock()
			fmt.Fprintf(&k.log, "kubelet: %v\n", err)
			k.mu.Unlock()
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// runOnce starts the sidecar once and waits for it to exit.
func (k *kubelet) runOnce() error {
	ctx := context.Background()
	// Start times have one-second precision: start on a fresh second, so the
	// recorded start is never before what the agent reads as its wanted revision's
	// timestamp (the kubelet's restart back-off does the same in a cluster).
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	started := metav1.NewTime(time.Now().Truncate(time.Second))
	var pod corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := admin.Get(ctx, types.NamespacedName{Namespace: k.ns, Name: k.pod}, &pod); err != nil {
			return err
		}
		setRunning(&pod, revision.ReloadSidecarName(k.set), started)
		return admin.Status().Update(ctx, &pod)
	})
	if err != nil {
		return err
	}
	envs, err := k.sidecarEnv(&pod)
	if err != nil {
		return err
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), runAgentEnv+"=1", "KUBECONFIG="+k.kubeconfig)
	cmd.Env = append(cmd.Env, envs...)
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return nil
	}
	cmd.Stdout, cmd.Stderr = &lockedWriter{k}, &lockedWriter{k}
	k.starts++
	fmt.Fprintf(&k.log, "kubelet: start %d at %s with %v\n", k.starts, started.Format(time.RFC3339), envs)
	err = cmd.Start()
	k.cmd = cmd
	k.mu.Unlock()
	if err != nil {
		return err
	}
	err = cmd.Wait()
	k.mu.Lock()
	fmt.Fprintf(&k.log, "kubelet: agent exited: %v\n", err)
	k.mu.Unlock()
	return nil
}

type lockedWriter struct{ k *kubelet }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.k.mu.Lock()
	defer w.k.mu.Unlock()
	return w.k.log.Write(p)
}

// sidecarEnv resolves the sidecar's environment from the pod as the kubelet does:
// values as they are, fieldRefs through the downward API, the two volume paths mapped
// to the test's directories.
func (k *kubelet) sidecarEnv(pod *corev1.Pod) ([]string, error) {
	name := revision.ReloadSidecarName(k.set)
	var sidecar *corev1.Container
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			sidecar = &pod.Spec.InitContainers[i]
		}
	}
	if sidecar == nil {
		return nil, fmt.Errorf("pod %s has no sidecar %s", pod.Name, name)
	}
	var out []string
	for _, e := range sidecar.Env {
		v := e.Value
		if e.ValueFrom != nil {
			fp := e.ValueFrom.FieldRef.FieldPath
			switch {
			case fp == "metadata.name":
				v = pod.Name
			case fp == "metadata.namespace":
				v = pod.Namespace
			case strings.HasPrefix(fp, "metadata.annotations['"):
				v = pod.Annotations[strings.TrimSuffix(strings.TrimPrefix(fp, "metadata.annotations['"), "']")]
			default:
				return nil, fmt.Errorf("env %s: field %s not emulated", e.Name, fp)
			}
		}
		switch e.Name {
		case revision.EnvDataDir:
			v = k.dir
		case revision.EnvHubFile:
			v = k.hubFile
		}
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

// setRunning records every container of the pod as running and ready, the sidecar
// started at started (the others keep their start), and the pod ready.
func setRunning(pod *corev1.Pod, sidecar string, started metav1.Time) {
	prev := map[string]metav1.Time{}
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if cs.State.Running != nil {
			prev[cs.Name] = cs.State.Running.StartedAt
		}
	}
	markRunning(pod, started, func(c corev1.Container) metav1.Time {
		if at, ok := prev[c.Name]; ok && c.Name != sidecar {
			return at
		}
		return started
	})
}

// markRunning records every container of the pod as running and ready, started at
// startedAt(c), and the pod running and ready since ready.
func markRunning(pod *corev1.Pod, ready metav1.Time, startedAt func(corev1.Container) metav1.Time) {
	status := func(c corev1.Container) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "sha256:0", Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt(c)}}}
	}
	pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses = nil, nil
	for _, c := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, status(c))
	}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, status(c))
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ready}}
}

// restartContainer plays the node daemon that restarts an injected container: the
// container's status shows it started again now (on a fresh second).
func (k *kubelet) restartContainer(name string) error {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	at := metav1.NewTime(time.Now().Truncate(time.Second))
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var pod corev1.Pod
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: k.ns, Name: k.pod}, &pod); err != nil {
			return err
		}
		for i := range pod.Status.ContainerStatuses {
			if cs := &pod.Status.ContainerStatuses[i]; cs.Name == name {
				cs.State.Running = &corev1.ContainerStateRunning{StartedAt: at}
				cs.RestartCount++
			}
		}
		return admin.Status().Update(context.Background(), &pod)
	})
}
