package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzCommands are the command lines FuzzMain feeds its input to, on stdin.
var fuzzCommands = [][]string{
	{"ranktable", "-f", "-"},
	{"rollout", "-f", "-", "--target", "2-8a1b2c", "--simulate", "--max-steps", "20"},
	{"rollout", "-f", "-", "--mode", "group", "--labels", "kthena", "--target", "2-8a1b2c"},
	{"revision", "-f", "-", "--now", "2025-02-14T17:30:00Z"},
	{"rdma", "-f", "-"},
	{"patch", "-f", "-", "--now", "2025-02-14T17:30:00Z"},
}

// FuzzMain runs every command on arbitrary stdin (seeded with the sample manifests):
// it must never panic, and must either print a plan with nothing on stderr (exit 0) or
// print nothing on stdout and exactly one line on stderr (exit 1).
func FuzzMain(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(casesDir, "manifests", "*", "*.yaml"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for i := range fuzzCommands {
			f.Add(uint8(i), data)
		}
	}
	f.Fuzz(func(t *testing.T, cmd uint8, data []byte) {
		args := fuzzCommands[int(cmd)%len(fuzzCommands)]
		var stdout, stderr bytes.Buffer
		code := Main(args, bytes.NewReader(data), &stdout, &stderr)
		switch code {
		case ExitOK:
			if stderr.Len() > 0 || stdout.Len() == 0 {
				t.Fatalf("exit 0 with stderr %q and %d bytes of stdout", stderr.String(), stdout.Len())
			}
		case ExitError, ExitUsage:
			if stdout.Len() > 0 {
				t.Fatalf("exit %d with output on stdout: %q", code, stdout.String())
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") || !strings.HasPrefix(msg, "kplan "+args[0]+": ") {
				t.Fatalf("exit %d: stderr is not one line starting with the command: %q", code, msg)
			}
		default:
			t.Fatalf("exit code %d", code)
		}
	})
}
