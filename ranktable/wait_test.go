package ranktable_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/ranktable"
	corev1 "k8s.io/api/core/v1"
)

// waitRun runs the wait container's command with the machine's POSIX sh against a
// table file in a temporary directory (the ConfigMap volume).
type waitRun struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan error
	file           string
}

func startWait(t *testing.T, timeout time.Duration, setup func(file string)) *waitRun {
	t.Helper()
	dir := t.TempDir()
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine"}}}}
	if _, err := ranktable.Inject(pod, ranktable.InjectOptions{
		ConfigMapName: "qwen-0-ranktable",
		Template:      &ranktable.Template{MountPath: dir, Filename: "ranktable.json"},
		PollInterval:  time.Second,
		WaitTimeout:   timeout,
	}); err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.InitContainers[0]
	sh, err := exec.LookPath(c.Command[0])
	if err != nil {
		t.Skipf("no POSIX %s on this machine: %v", c.Command[0], err)
	}
	r := &waitRun{file: filepath.Join(dir, "ranktable.json"), done: make(chan error, 1)}
	if setup != nil {
		setup(r.file)
	}
	r.cmd = exec.Command(sh, c.Command[1:]...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

// writeTable replaces the file in one rename, as the kubelet updates ConfigMap volumes.
func writeTable(t *testing.T, file, content string) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// stillWaiting fails the test if the command ends within d.
func (r *waitRun) stillWaiting(t *testing.T, d time.Duration, why string) {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		t.Fatalf("the wait container ended %s (%v); stdout %q, stderr %q", why, err, r.stdout.String(), r.stderr.String())
	case <-time.After(d):
	}
}

// exit waits for the command to end and returns its exit code.
func (r *waitRun) exit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		t.Fatalf("the wait container still runs after %v; stdout %q, stderr %q", within, r.stdout.String(), r.stderr.String())
		return -1
	}
}

const completeTable = `{"version": "1.0", "server_count": "1", "server_list": [], "status": "completed"}`

// TestWaitContainerRunsInShell runs the injected wait command in a real shell.
func TestWaitContainerRunsInShell(t *testing.T) {
	t.Parallel()
	t.Run("it waits while the table is empty, then initializing, and exits 0 once complete", func(t *testing.T) {
		t.Parallel()
		r := startWait(t, 0, func(file string) { writeTable(t, file, "") })
		r.stillWaiting(t, 1500*time.Millisecond, "while the table was empty")
		writeTable(t, r.file, `{"version": "1.0", "server_count": "0", "server_list": [], "status": "initializing"}`)
		r.stillWaiting(t, 2500*time.Millisecond, "while the table was initializing")
		writeTable(t, r.file, completeTable)
		if code := r.exit(t, 5*time.Second); code != 0 {
			t.Fatalf("exit code %d once the table was complete; stderr %q", code, r.stderr.String())
		}
		if !strings.Contains(r.stdout.String(), completeTable) {
			t.Errorf("stdout %q does not show the table", r.stdout.String())
		}
	})
	t.Run("a complete table lets it exit 0 at once", func(t *testing.T) {
		t.Parallel()
		r := startWait(t, 2*time.Second, func(file string) { writeTable(t, file, completeTable) })
		if code := r.exit(t, 2*time.Second); code != 0 {
			t.Fatalf("exit code %d; stderr %q", code, r.stderr.String())
		}
	})
	t.Run("a missing file fails it with exit 1 once its timeout passes", func(t *testing.T) {
		t.Parallel()
		r := startWait(t, 2*time.Second, nil)
		r.stillWaiting(t, 1500*time.Millisecond, "before its timeout")
		if code := r.exit(t, 5*time.Second); code != 1 {
			t.Fatalf("exit code %d, want 1; stderr %q", code, r.stderr.String())
		}
		if want := "ranktable " + r.file + " does not exist after 2s"; !strings.Contains(r.stderr.String(), want) {
			t.Errorf("stderr %q does not say %q", r.stderr.String(), want)
		}
	})
	t.Run("an initializing table fails it with exit 1 once its timeout passes", func(t *testing.T) {
		t.Parallel()
		r := startWait(t, time.Second, func(file string) { writeTable(t, file, `{"status": "initializing"}`) })
		if code := r.exit(t, 5*time.Second); code != 1 {
			t.Fatalf("exit code %d, want 1; stderr %q", code, r.stderr.String())
		}
		if !strings.Contains(r.stderr.String(), "is still empty or initializing after 1s") {
			t.Errorf("stderr %q does not say the table is still initializing", r.stderr.String())
		}
	})
	t.Run("without a timeout a missing file keeps it waiting", func(t *testing.T) {
		t.Parallel()
		r := startWait(t, 0, nil)
		r.stillWaiting(t, 3*time.Second, "without a timeout")
	})
}
