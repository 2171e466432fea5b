package reload_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	cmsv1 "github.com/kplan-dev/kplan/examples/api/configmapset/v1alpha1"
	"github.com/kplan-dev/kplan/examples/reload"
	"github.com/kplan-dev/kplan/revision"
)

// syncBuffer is a log the agent writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.WriteString(string(p))
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// agentWorld is a pod of set "web-config" that wants revision 2 since an hour after
// the fake boot: its reload sidecar runs since after that, its container main
// (which mounts the files) since before, and the hub holds both revisions.
func agentWorld(t *testing.T, method revision.RestartMethod, share bool) (*fake.Clientset, *dynamicfake.FakeDynamicClient, *revision.ConfigMapSet, string) {
	t.Helper()
	var hub revision.Hub
	r1, err := hub.Add(map[string]string{"a.conf": "1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := r1.Hub.Add(map[string]string{"a.conf": "2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := r2.Hub.HubConfigMap("ns", "web-config", nil)
	if err != nil {
		t.Fatal(err)
	}
	set := &revision.ConfigMapSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-config"}, Spec: revision.ConfigMapSetSpec{
		Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Data:           map[string]string{"a.conf": "2"},
		Containers:     []revision.ContainerInjectSpec{{Name: "main", MountPath: "/etc/app"}},
		UpdateStrategy: revision.ConfigMapSetUpdateStrategy{RestartInjectedContainers: true, RestartMethod: method},
	}}
	keys, err := revision.KeysFor(set.Name)
	if err != nil {
		t.Fatal(err)
	}
	sidecar := revision.ReloadSidecarName(set.Name)
	running := func(name string, at time.Time) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{
			keys.UpdateRevision: r2.Name, keys.UpdateRevisionTimestamp: revision.FormatTimestamp(since),
			keys.CurrentRevision: r1.Name, keys.CurrentRevisionTimestamp: revision.FormatTimestamp(fakeBoot),
		}},
		Spec: corev1.PodSpec{
			ShareProcessNamespace: &share,
			InitContainers:        []corev1.Container{{Name: sidecar, Image: "reload"}},
			Containers: []corev1.Container{{Name: "main", Image: "app", VolumeMounts: []corev1.VolumeMount{{Name: revision.VolumeName(set.Name), MountPath: "/etc/app", ReadOnly: true}},
				Env: []corev1.EnvVar{{Name: revision.EnvContainerName, Value: "main"}}}},
		},
		Status: corev1.PodStatus{
			Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			InitContainerStatuses: []corev1.ContainerStatus{running(sidecar, since.Add(time.Minute))},
			ContainerStatuses:     []corev1.ContainerStatus{running("main", fakeBoot.Add(10*time.Minute))},
		},
	}
	scheme := runtime.NewScheme()
	if err := cmsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientset(cm, pod), dynamicfake.NewSimpleDynamicClient(scheme, set), set, r2.Name
}

// runAgentUntil runs the agent until cond holds for its log (or ten seconds pass).
func runAgentUntil(t *testing.T, a *reload.Agent, log *syncBuffer, cond func(string) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(log.String()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if !cond(log.String()) {
		t.Fatalf("the agent's log never got there:\n%s", log.String())
	}
}

// The agent restarts the injected container by signal (restartMethod Signal), says
// why it cannot (no shared process namespace), or waits for another restarter
// (External); once the container runs again it marks the pod current.
func TestAgentRestartsInjectedContainers(t *testing.T) {
	tests := []struct {
		name   string
		method revision.RestartMethod
		share  bool
		want   string // in the log
		sent   []string
	}{
		{"by default the main process of main gets SIGTERM", "", true, "sent SIGTERM to container main (pid 7, started ", []string{"7 terminated"}},
		{"a pod without a shared process namespace is reported", revision.RestartSignal, false, "container main: NoSharedProcessNamespace: the pod does not set spec.shareProcessNamespace", nil},
		{"with External the agent waits for another restarter", revision.RestartExternal, true, "waiting for another restarter to restart [main] (restartMethod External)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, dyn, set, rev := agentWorld(t, tt.method, tt.share)
			rec := &recorder{}
			log := &syncBuffer{}
			var proc []fakeProc
			if tt.share {
				proc = append(proc, fakeProc{pid: 7, ppid: 0, started: 10 * time.Minute, marker: "main"})
			}
			a := &reload.Agent{
				Config: reload.Config{Revision: rev, DataDir: t.TempDir(), SetName: set.Name, Namespace: "ns", PodName: "web-0", Poll: 10 * time.Millisecond},
				Core:   core.CoreV1(), Dynamic: dyn, Log: log, Now: func() time.Time { return since.Add(2 * time.Minute) },
				Signaller: &reload.Signaller{Proc: writeProc(t, proc...), Kill: rec.kill},
			}
			runAgentUntil(t, a, log, func(l string) bool { return strings.Contains(l, tt.want) })
			time.Sleep(50 * time.Millisecond) // a few more polls: no second signal
			if strings.Join(rec.sent, ",") != strings.Join(tt.sent, ",") {
				t.Errorf("signals %v, want %v", rec.sent, tt.sent)
			}
			if n := strings.Count(log.String(), tt.want); n != 1 {
				t.Errorf("logged %d times, want once:\n%s", n, log.String())
			}
			if tt.sent == nil {
				return
			}
			t.Run("once the kubelet restarted main the pod is marked current", func(t *testing.T) {
				pods := core.CoreV1().Pods("ns")
				pod, err := pods.Get(context.Background(), "web-0", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				pod.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(since.Add(time.Minute))
				if _, err := pods.UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				runAgentUntil(t, a, log, func(l string) bool { return strings.Contains(l, "marked current at revision "+rev) })
				if len(rec.sent) != 1 {
					t.Errorf("signals %v, want one", rec.sent)
				}
			})
		})
	}
}
