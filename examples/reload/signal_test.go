package reload_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan/examples/reload"
	"github.com/kplan-dev/kplan/revision"
)

// fakeBoot is the boot time of every fake proc tree.
var fakeBoot = time.Unix(1_700_000_000, 0)

// fakeProc is one process of a fake proc tree.
type fakeProc struct {
	pid, ppid int
	comm      string
	state     string        // "S" unless set
	started   time.Duration // after fakeBoot
	marker    string        // revision.EnvContainerName, "" for none
	noEnv     bool          // no environ file (as if unreadable)
	cgroup    string
}

// writeProc builds a proc tree under a new directory: stat with btime, and each
// process's stat, environ and cgroup.
func writeProc(t *testing.T, procs ...fakeProc) string {
	t.Helper()
	root := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", fmt.Sprintf("cpu  1 2 3\nbtime %d\nprocesses 9\n", fakeBoot.Unix()))
	write("uptime", "not a process\n")
	for _, p := range procs {
		dir := fmt.Sprint(p.pid)
		if err := os.Mkdir(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		state := p.state
		if state == "" {
			state = "S"
		}
		comm := p.comm
		if comm == "" {
			comm = "app"
		}
		// Fields 3..22 (state .. starttime) and a few after, as the kernel writes them.
		fields := []string{state, fmt.Sprint(p.ppid), "1", "1", "0", "-1", "4194560", "0", "0", "0", "0", "0", "0", "0", "0", "20", "0", "1", "0",
			fmt.Sprint(int64(p.started / (time.Second / 100))), "1000", "100"}
		write(dir+"/stat", fmt.Sprintf("%d (%s) %s\n", p.pid, comm, strings.Join(fields, " ")))
		env := "PATH=/bin\x00HOME=/\x00"
		if p.marker != "" {
			env += revision.EnvContainerName + "=" + p.marker + "\x00"
		}
		if !p.noEnv {
			write(dir+"/environ", env)
		}
		cg := p.cgroup
		if cg == "" {
			cg = "0::/\n"
		}
		write(dir+"/cgroup", cg)
	}
	return root
}

// recorder is a Kill that records each signal and answers with errs[pid].
type recorder struct {
	sent []string
	errs map[int]error
}

func (r *recorder) kill(pid int, sig syscall.Signal) error {
	if err := r.errs[pid]; err != nil {
		return err
	}
	r.sent = append(r.sent, fmt.Sprintf("%d %s", pid, sig))
	return nil
}

func sharedPod() *corev1.Pod {
	yes := true
	p := &corev1.Pod{}
	p.Namespace, p.Name = "ns", "p"
	p.Spec.ShareProcessNamespace = &yes
	return p
}

func outcomes(rs []reload.SignalResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %s %d", r.Container, r.Outcome, r.PID))
	}
	return out
}

// since is the wanted revision's timestamp in the fake trees: an hour after boot.
var since = fakeBoot.Add(time.Hour)

func TestSignallerOnAFakeProc(t *testing.T) {
	before, after := 10*time.Minute, 2*time.Hour // start times after boot
	pause := fakeProc{pid: 1, ppid: 0, comm: "pause", started: time.Second}
	tests := []struct {
		name       string
		procs      []fakeProc
		pod        func(*corev1.Pod)
		containers []string
		errs       map[int]error
		want       []string // outcomes
		sent       []string
	}{
		{"the topmost, earliest process of the container is signalled, not its children, exec sessions or other containers",
			[]fakeProc{pause,
				{pid: 7, ppid: 0, started: before, marker: "app", comm: "server (main) x"},
				{pid: 9, ppid: 7, started: before + time.Second, marker: "app", comm: "worker"},
				{pid: 40, ppid: 0, started: before + 30*time.Minute, marker: "app", comm: "sh"},
				{pid: 12, ppid: 0, started: before, marker: "other"},
				{pid: 13, ppid: 0, started: before, comm: "reload"},
			}, nil, []string{"app"}, nil,
			[]string{"app Signalled 7"}, []string{"7 terminated"}},
		{"a container whose main process started after the wanted revision is not signalled",
			[]fakeProc{pause, {pid: 70, ppid: 0, started: after, marker: "app"}},
			nil, []string{"app"}, nil,
			[]string{"app StartedAfter 70"}, nil},
		{"a process found by the container ID in its cgroup when its environment cannot be read",
			[]fakeProc{pause,
				{pid: 7, ppid: 0, started: before, noEnv: true, cgroup: "0::/../cri-containerd-0123456789abcdef0123.scope\n"},
				{pid: 8, ppid: 0, started: before, noEnv: true, cgroup: "0::/../cri-containerd-ffff456789abcdef0123.scope\n"},
			}, func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{
					{Name: "app", ContainerID: "containerd://0123456789abcdef0123"},
					{Name: "other", ContainerID: "containerd://ffff456789abcdef0123"},
				}
			}, []string{"app"}, nil,
			[]string{"app Signalled 7"}, []string{"7 terminated"}},
		{"zombies are not running and are skipped",
			[]fakeProc{pause, {pid: 5, ppid: 0, started: before - time.Minute, marker: "app", state: "Z"}, {pid: 6, ppid: 0, started: before, marker: "app"}},
			nil, []string{"app"}, nil,
			[]string{"app Signalled 6"}, []string{"6 terminated"}},
		{"several containers are signalled in the order given",
			[]fakeProc{pause, {pid: 20, ppid: 0, started: before, marker: "b"}, {pid: 21, ppid: 0, started: before, marker: "a"}},
			nil, []string{"b", "a"}, nil,
			[]string{"b Signalled 20", "a Signalled 21"}, []string{"20 terminated", "21 terminated"}},
		{"a pod that does not share its process namespace is reported as such",
			[]fakeProc{pause}, func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = nil }, []string{"app"}, nil,
			[]string{"app NoSharedProcessNamespace 0"}, nil},
		{"a container with no visible process is not found",
			[]fakeProc{pause, {pid: 12, ppid: 0, started: before, marker: "other"}}, nil, []string{"app"}, nil,
			[]string{"app NotFound 0"}, nil},
		{"a refused signal is denied, a vanished process gone",
			[]fakeProc{pause, {pid: 7, ppid: 0, started: before, marker: "app"}, {pid: 8, ppid: 0, started: before, marker: "side"}},
			nil, []string{"app", "side"}, map[int]error{7: syscall.EPERM, 8: syscall.ESRCH},
			[]string{"app Denied 7", "side Gone 8"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := sharedPod()
			if tt.pod != nil {
				tt.pod(pod)
			}
			rec := &recorder{errs: tt.errs}
			s := &reload.Signaller{Proc: writeProc(t, tt.procs...), Kill: rec.kill}
			got, err := s.Restart(pod, tt.containers, since)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, outcomes(got)); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.sent, rec.sent); diff != "" {
				t.Errorf("signals (-want +got):\n%s", diff)
			}
			for _, r := range got {
				if !r.Outcome.CanProceed() && !strings.Contains(r.String(), "container "+r.Container) || !r.Outcome.CanProceed() && r.Detail == "" {
					t.Errorf("a failure without a name or a detail: %s", r)
				}
			}
		})
	}
}

// The same Signaller never signals a process twice; a new one (the agent restarted)
// does not signal a process that started after the wanted revision.
func TestSignallerIsIdempotent(t *testing.T) {
	root := writeProc(t, fakeProc{pid: 7, ppid: 0, started: 10 * time.Minute, marker: "app"})
	rec := &recorder{}
	s := &reload.Signaller{Proc: root, Kill: rec.kill}
	for i, want := range []string{"app Signalled 7", "app SignalledBefore 7"} {
		got, err := s.Restart(sharedPod(), []string{"app"}, since)
		if err != nil || !slices.Equal(outcomes(got), []string{want}) {
			t.Fatalf("call %d: %v %v, want %s", i+1, outcomes(got), err, want)
		}
	}
	if len(rec.sent) != 1 {
		t.Errorf("signals %v, want one", rec.sent)
	}
	// The kubelet restarted the container: a new main process under a reused pid.
	root = writeProc(t, fakeProc{pid: 7, ppid: 0, started: 2 * time.Hour, marker: "app"})
	fresh := &reload.Signaller{Proc: root, Kill: rec.kill}
	got, err := fresh.Restart(sharedPod(), []string{"app"}, since)
	if err != nil || !slices.Equal(outcomes(got), []string{"app StartedAfter 7"}) || len(rec.sent) != 1 {
		t.Errorf("after the restart: %v %v, signals %v", outcomes(got), err, rec.sent)
	}
}

func TestSignallerErrors(t *testing.T) {
	t.Run("a proc tree without a boot time", func(t *testing.T) {
		root := t.TempDir()
		_, err := (&reload.Signaller{Proc: root}).Restart(sharedPod(), []string{"app"}, since)
		if err == nil || !strings.Contains(err.Error(), "boot time") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no pod", func(t *testing.T) {
		if _, err := (&reload.Signaller{}).Restart(nil, []string{"app"}, since); err == nil {
			t.Error("no error")
		}
	})
	t.Run("an environment of another user is counted in the detail", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads every file")
		}
		root := writeProc(t, fakeProc{pid: 7, ppid: 0, started: time.Minute, marker: "app"})
		if err := os.Chmod(filepath.Join(root, "7", "environ"), 0); err != nil {
			t.Fatal(err)
		}
		got, err := (&reload.Signaller{Proc: root, Kill: (&recorder{}).kill}).Restart(sharedPod(), []string{"app"}, since)
		if err != nil || len(got) != 1 || got[0].Outcome != reload.NotFound || !strings.Contains(got[0].Detail, "1 processes could not be read") {
			t.Errorf("%v %v", got, err)
		}
	})
}

// helperEnv makes the test binary a helper process (see TestHelperProcess).
const helperEnv = "RELOAD_TEST_HELPER_DIR"

// TestHelperProcess is not a test: run with helperEnv set, it stands for a
// container's main process. It starts a child ("sleep", inheriting its marker), writes
// "<pid>.ready" and, on SIGTERM, "<pid>.term", and keeps running until killed (a slow
// graceful shutdown).
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("a helper process for TestSignallerWithRealProcesses")
	}
	term := make(chan os.Signal, 1)
	signalNotify(term)
	child, err := startSleep()
	if err != nil {
		os.Exit(3)
	}
	note := func(suffix string) {
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.%s", os.Getpid(), suffix)), []byte(fmt.Sprint(child)), 0o644)
	}
	note("ready")
	<-term
	note("term")
	select {}
}

// Real processes carrying the marker: the agent's restart step signals the main
// process of each listed container that started before the wanted revision, and no
// other process: not its child, not another container's, not one started after.
func TestSignallerWithRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and waits two seconds")
	}
	dir := t.TempDir()
	// Marker values unique to this run, so no other process on the machine matches.
	tag := fmt.Sprintf("t%d", os.Getpid())
	app, other, late := tag+"-app", tag+"-other", tag+"-late"
	start := func(marker string) (main, child int) {
		t.Helper()
		pid, err := startHelper(dir, revision.EnvContainerName+"="+marker)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		ready := filepath.Join(dir, fmt.Sprintf("%d.ready", pid))
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, err := os.ReadFile(ready)
			if err == nil && len(b) > 0 {
				if _, err := fmt.Sscan(string(b), &child); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
				return pid, child
			}
			if time.Now().After(deadline) {
				t.Fatalf("helper %s did not start", marker)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	appPID, appChild := start(app)
	otherPID, _ := start(other)
	// Start times are read to about a second: the wanted revision comes more than a
	// second after the first processes and more than a second before the last.
	time.Sleep(1100 * time.Millisecond)
	wanted := time.Now()
	time.Sleep(1100 * time.Millisecond)
	latePID, _ := start(late)

	s := &reload.Signaller{}
	got, err := s.Restart(sharedPod(), []string{app, late}, wanted)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{app + " Signalled " + fmt.Sprint(appPID), late + " StartedAfter " + fmt.Sprint(latePID)}
	if diff := cmp.Diff(want, outcomes(got)); diff != "" {
		t.Fatalf("outcomes (-want +got):\n%s", diff)
	}
	termed := func(pid int) bool {
		_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%d.term", pid)))
		return err == nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for !termed(appPID) {
		if time.Now().After(deadline) {
			t.Fatalf("the main process %d of %s got no SIGTERM", appPID, app)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Give a wrongly sent signal time to arrive before checking that none was.
	time.Sleep(200 * time.Millisecond)
	for _, pid := range []int{otherPID, latePID} {
		if termed(pid) {
			t.Errorf("process %d got SIGTERM", pid)
		}
	}
	if err := syscall.Kill(appChild, 0); err != nil {
		t.Errorf("the child %d of the main process: %v (a signal killed it)", appChild, err)
	}
	t.Run("the same process, still shutting down, is not signalled again", func(t *testing.T) {
		got, err := s.Restart(sharedPod(), []string{app}, wanted)
		if err != nil || !slices.Equal(outcomes(got), []string{app + " SignalledBefore " + fmt.Sprint(appPID)}) {
			t.Errorf("%v %v", outcomes(got), err)
		}
	})
}

// startHelper starts this test binary as TestHelperProcess with env added.
func startHelper(dir string, env ...string) (int, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+dir), env...)
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() { _ = cmd.Wait() }() // reap it once killed
	return cmd.Process.Pid, nil
}

// startSleep starts "sleep", inheriting the environment, and returns its pid.
func startSleep() (int, error) {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

func signalNotify(c chan os.Signal) { signal.Notify(c, syscall.SIGTERM) }
