package reload

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan/revision"
)

// DefaultProcRoot is where the agent reads the processes it can see.
const DefaultProcRoot = "/proc"

// clockTicks is the kernel's USER_HZ, the unit of a process's start time in
// /proc/<pid>/stat: 100 on every Linux architecture Kubernetes runs on.
const clockTicks = 100

// Outcome says what Signaller.Restart did for one container.
type Outcome string

const (
	// Signalled: the container's main process was sent SIGTERM now.
	Signalled Outcome = "Signalled"
	// SignalledBefore: this Signaller sent the same process SIGTERM earlier; it is
	// still shutting down.
	SignalledBefore Outcome = "SignalledBefore"
	// StartedAfter: the container's main process started after the wanted
	// revision's timestamp (it restarted already): the kubelet's status has not
	// caught up. Nothing is sent.
	StartedAfter Outcome = "StartedAfter"
	// Gone: the process exited between being found and being signalled; the
	// container is restarting.
	Gone Outcome = "Gone"
	// NoSharedProcessNamespace: the pod's containers do not share one process
	// namespace, so the agent sees none of the container's processes.
	NoSharedProcessNamespace Outcome = "NoSharedProcessNamespace"
	// NotFound: no visible process carries the container's marker
	// (revision.EnvContainerName) or its container ID.
	NotFound Outcome = "NotFound"
	// Denied: the kernel refused the signal (EPERM): the container runs as another
	// user and the agent lacks CAP_KILL.
	Denied Outcome = "Denied"
	// Failed: reading the processes or sending the signal failed otherwise.
	Failed Outcome = "Failed"
)

// CanProceed reports whether the outcome lets the container restart without
// anyone else's help (the signal was sent, or the container restarts already).
func (o Outcome) CanProceed() bool {
	switch o {
	case Signalled, SignalledBefore, StartedAfter, Gone:
		return true
	}
	return false
}

// SignalResult is what Restart did for one container.
type SignalResult struct {
	// Container is the container's name.
	Container string
	// Outcome says what happened.
	Outcome Outcome
	// PID is the container's main process as the agent sees it (0 when none was
	// found).
	PID int
	// Started is when that process started (to the second).
	Started time.Time
	// Detail explains a failure for a person: what was looked for and what to
	// change.
	Detail string
}

func (r SignalResult) String() string {
	s := fmt.Sprintf("container %s: %s", r.Container, r.Outcome)
	if r.PID != 0 {
		s += fmt.Sprintf(" (pid %d, started %s)", r.PID, r.Started.UTC().Format(time.RFC3339))
	}
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// Signaller restarts containers of the agent's own pod by sending their main
// processes SIGTERM through the pod's shared process namespace; the kubelet then
// restarts each container (restartPolicy Always, or a native sidecar). It finds a
// container's processes by the marker revision.Inject sets
// (revision.EnvContainerName=<name> in /proc/<pid>/environ, readable for processes
// of the agent's own user) or, failing that, by the container's ID from the pod
// status in /proc/<pid>/cgroup (readable for every process). The main process is the
// earliest-started one whose parent is not of the container (a kubectl exec session
// starts later). A process that started at or after the wanted revision's timestamp
// is never signalled, so an agent that restarts itself does not restart a container
// twice.
type Signaller struct {
	// Proc is the root of the proc file system (DefaultProcRoot when empty).
	Proc string
	// Kill sends a signal (syscall.Kill when nil).
	Kill func(pid int, sig syscall.Signal) error

	sent map[procKey]bool
}

// procKey names one process across PID reuse.
type procKey struct {
	pid   int
	start uint64
}

// process is one entry of the proc file system.
type process struct {
	pid, ppid  int
	start      uint64 // clock ticks after boot
	container  string // the container it belongs to, "" when unknown
	unreadable bool   // its environment could not be read
}

// Restart restarts each of containers (names of pod's containers, as
// revision.Restarts lists them) whose main process started before since (the wanted
// revision's timestamp), and reports one SignalResult per container, in the order
// given. The error is for a proc file system that cannot be read at all.
func (s *Signaller) Restart(pod *corev1.Pod, containers []string, since time.Time) ([]SignalResult, error) {
	if pod == nil {
		return nil, fmt.Errorf("reload: restart: no pod")
	}
	root := s.Proc
	if root == "" {
		root = DefaultProcRoot
	}
	kill := s.Kill
	if kill == nil {
		kill = syscall.Kill
	}
	if s.sent == nil {
		s.sent = map[procKey]bool{}
	}
	boot, err := bootTime(root)
	if err != nil {
		return nil, err
	}
	procs, err := scan(root, containerIDs(pod, containers))
	if err != nil {
		return nil, err
	}
	shared := pod.Spec.HostPID || (pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace)
	out := make([]SignalResult, 0, len(containers))
	for _, name := range containers {
		r := SignalResult{Container: name}
		main, unreadable := mainProcess(procs, name)
		switch {
		case main == nil && !shared:
			r.Outcome = NoSharedProcessNamespace
			r.Detail = "the pod does not set spec.shareProcessNamespace, so the reload sidecar cannot see the container's processes (pods created before the set restarted injected containers lack it): re-create the pod"
		case main == nil:
			r.Outcome = NotFound
			r.Detail = fmt.Sprintf("no process in %s carries %s=%s or the container's ID", root, revision.EnvContainerName, name)
			if unreadable > 0 {
				r.Detail += fmt.Sprintf("; the environment of %d processes could not be read (another user's: run the container as the reload sidecar's user)", unreadable)
			}
		}
		if main == nil {
			out = append(out, r)
			continue
		}
		r.PID = main.pid
		r.Started = boot.Add(time.Duration(main.start) * time.Second / clockTicks)
		key := procKey{main.pid, main.start}
		switch {
		case !r.Started.Before(since):
			r.Outcome = StartedAfter
		case s.sent[key]:
			r.Outcome = SignalledBefore
		default:
			switch err := kill(main.pid, syscall.SIGTERM); {
			case err == nil:
				r.Outcome = Signalled
				s.sent[key] = true
			case errors.Is(err, syscall.ESRCH):
				r.Outcome = Gone
			case errors.Is(err, syscall.EPERM):
				r.Outcome = Denied
				r.Detail = "the kernel refused SIGTERM: the container runs as another user than the reload sidecar; run both as one user, or give the sidecar CAP_KILL"
			default:
				r.Outcome, r.Detail = Failed, err.Error()
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// containerIDs maps the runtime ID of each named container's current run (from the
// pod status, without the "containerd://" prefix) to its name. IDs shorter than 12
// characters are left out: they could match by chance.
func containerIDs(pod *corev1.Pod, names []string) map[string]string {
	ids := map[string]string{}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if !slices.Contains(names, cs.Name) {
				continue
			}
			_, id, ok := strings.Cut(cs.ContainerID, "://")
			if ok && len(id) >= 12 {
				ids[id] = cs.Name
			}
		}
	}
	return ids
}

// mainProcess returns the earliest-started process of container whose parent is not
// a process of the container (ties: the lowest pid), and how many processes had an
// unreadable environment.
func mainProcess(procs map[int]*process, container string) (*process, int) {
	var main *process
	unreadable := 0
	for _, p := range procs {
		if p.unreadable {
			unreadable++
		}
		if p.container != container {
			continue
		}
		if parent, ok := procs[p.ppid]; ok && parent.container == container {
			continue
		}
		if main == nil || p.start < main.start || (p.start == main.start && p.pid < main.pid) {
			main = p
		}
	}
	return main, unreadable
}

// scan reads every process under root: its parent, start time and container (by
// marker, else by container ID). Processes that exit while being read are left out.
func scan(root string, ids map[string]string) (map[int]*process, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("reading processes: %w", err)
	}
	procs := map[int]*process{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || !e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		dir := filepath.Join(root, e.Name())
		p, err := readStat(dir)
		if err != nil {
			continue // exited, or not a process directory
		}
		p.pid = pid
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		switch {
		case err == nil:
			p.container = markerIn(env)
		case errors.Is(err, fs.ErrPermission):
			p.unreadable = true
		}
		if p.container == "" && len(ids) > 0 {
			if cg, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil {
				for id, name := range ids {
					if bytes.Contains(cg, []byte(id)) {
						p.container = name
					}
				}
			}
		}
		procs[pid] = p
	}
	return procs, nil
}

// markerIn returns the value of revision.EnvContainerName in a NUL-separated
// environment, or "".
func markerIn(env []byte) string {
	prefix := []byte(revision.EnvContainerName + "=")
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v)
		}
	}
	return ""
}

// readStat reads the parent and the start time from dir/stat. The command name (in
// parentheses) may hold spaces and parentheses, so fields are counted after the
// last ')'. Zombies are left out: they are not running.
func readStat(dir string) (*process, error) {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("%s/stat: no command name", dir)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22 (starttime).
	if len(f) < 20 {
		return nil, fmt.Errorf("%s/stat: %d fields", dir, len(f)+2)
	}
	if f[0] == "Z" || f[0] == "X" {
		return nil, fmt.Errorf("%s: not running (%s)", dir, f[0])
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return nil, fmt.Errorf("%s/stat: ppid %q", dir, f[1])
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s/stat: starttime %q", dir, f[19])
	}
	return &process{ppid: ppid, start: start}, nil
}

// bootTime reads the boot time (btime, whole seconds) from root/stat.
func bootTime(root string) (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(root, "stat"))
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the boot time: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("%s/stat: btime %q", root, v)
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("%s/stat: no btime line", root)
}
