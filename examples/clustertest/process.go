package clustertest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// Process is a component running as a child process, its output in a log file.
type Process struct {
	// Path is the binary.
	Path string
	// Log is the file holding its output.
	Log string

	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
	err  error
}

// startProcess starts bin with args (and env, nil: the test's), its output written
// to the file logPath and copied to copyTo.
func startProcess(logPath string, copyTo io.Writer, bin string, env []string, args ...string) (*Process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &Process{Path: bin, Log: logPath, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	out := io.Writer(f)
	if copyTo != io.Discard {
		out = io.MultiWriter(f, copyTo)
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("clustertest: start %s: %w", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process exited (see exec.Cmd.Wait); nil while it runs.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Stop kills the process and waits for it to exit. It may be called more than once.
func (p *Process) Stop() {
	p.once.Do(func() { _ = p.cmd.Process.Signal(syscall.SIGKILL) })
	<-p.done
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	b, _ := os.ReadFile(p.Log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
