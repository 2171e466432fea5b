package operator_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"

	"github.com/kplan-dev/kplan/revision"
)

// agentProcEnv names, for the agent process the test kubelet starts, the proc file
// system to read instead of /proc (its -proc flag).
const agentProcEnv = "KPLAN_TEST_RELOAD_PROC"

// fakeContainer is one run of a container's main process: a real process (sleep)
// carrying the marker revision.Inject sets, made visible to the agent through a proc
// root that holds the machine's boot time and a link to that process alone, as the
// pod's shared process namespace shows the agent its pod's processes only.
type fakeContainer struct {
	cmd  *exec.Cmd
	done chan error
}

func startFakeContainer(t *testing.T, procRoot, name string) *fakeContainer {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.Env = []string{revision.EnvContainerName + "=" + name}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &fakeContainer{cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	pid := fmt.Sprint(cmd.Process.Pid)
	if err := os.Symlink(filepath.Join("/proc", pid), filepath.Join(procRoot, pid)); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConfigMapSetCompletesBySignal: a ConfigMapSet that restarts injected containers
// completes a rollout with no OpenKruise in the cluster: the webhook makes the pod
// share one process namespace and marks the main container; the reload agent (a
// process, as the sidecar) finds the container's main process (a real process) and
// sends it SIGTERM; the test plays the kubelet, which restarts the container; the
// agent then marks the pod current and the set completes.
func TestConfigMapSetCompletesBySignal(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name == "apps.kruise.io" {
			t.Fatalf("the API server serves %s: this test is about a cluster without OpenKruise", g.Name)
		}
	}

	ns := newNamespace(t)
	v1, v2 := taggedFiles("v1"), taggedFiles("v2")
	r1, r2 := revision.RevisionHash(v1, 0), revision.RevisionHash(v2, 0)
	set := newSet(t, ns, "signalled", v1, false)
	updateSet(t, set, func(s *revision.ConfigMapSet) { s.Spec.UpdateStrategy.RestartInjectedContainers = true })
	pod := newWebPod(t, ns, "web-0")
	if s := pod.Spec.ShareProcessNamespace; s == nil || !*s {
		t.Fatalf("the webhook did not make pod %s share its process namespace: %v", pod.Name, s)
	}
	if !hasEnv(pod.Spec.Containers, "main", revision.EnvContainerName, "main") {
		t.Fatalf("the webhook did not mark container main: %+v", pod.Spec.Containers)
	}

	procRoot := t.TempDir()
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if err := os.WriteFile(filepath.Join(procRoot, "stat"), stat, 0o644); err != nil {
		t.Fatal(err)
	}
	main := startFakeContainer(t, procRoot, "main")
	t.Setenv(agentProcEnv, procRoot)
	k := startKubelet(t, ns, "web-0", set.Name, agentKubeconfig(t, ns, "web", set.Name, "web-0"))
	waitServes(t, k, set, r1, v1)
	waitComplete(t, set, r1, 1)

	// Process start times are read to about a second: the new revision comes well
	// after main started.
	time.Sleep(1100 * time.Millisecond)
	updateSet(t, set, func(s *revision.ConfigMapSet) { s.Spec.Data = v2 })
	select {
	case err := <-main.done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ProcessState.String() != "signal: terminated" {
			t.Fatalf("main's process ended with %v, want SIGTERM", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("main's process got no signal; agent log:\n%s", k.logs())
	}
	// The agent logs the signal once kill returns, which can be after main has ended.
	want := fmt.Sprintf("sent SIGTERM to container main (pid %d", main.cmd.Process.Pid)
	if err := waitFor(30*time.Second, func() error {
		if !strings.Contains(k.logs(), want) {
			return fmt.Errorf("the agent log lacks %q", want)
		}
		return nil
	}); err != nil {
		t.Errorf("%v:\n%s", err, k.logs())
	}
	if st := podState(t, ns, "web-0", set); st.UpdateRevision != r2 || st.CurrentRevision != r1 {
		t.Fatalf("before main restarted: %+v, want wanted %s and current still %s", st, r2, r1)
	}
	// The kubelet restarts the container (restartPolicy Always).
	startFakeContainer(t, procRoot, "main")
	if err := k.restartContainer("main"); err != nil {
		t.Fatal(err)
	}
	waitServes(t, k, set, r2, v2)
	waitComplete(t, set, r2, 1)
	if n := strings.Count(k.logs(), "sent SIGTERM"); n != 1 {
		t.Errorf("the agent sent %d signals, want 1:\n%s", n, k.logs())
	}
}

// hasEnv reports whether the named container has env var name=value.
func hasEnv(cs []corev1.Container, container, name, value string) bool {
	for _, c := range cs {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name && e.Value == value {
				return true
			}
		}
	}
	return false
}
