package cli

import (
	"bytes"
	"strings"
	"testing"
)

// gangPods are two pods of one gang whose label value carries terminal escape
// sequences (a window-title change and a colour), as a hostile manifest could.
const gangPods = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: web-0
    labels: {controller-revision-hash: "1-a", gang: "\e]0;pwned\a\e[31mred"}
- apiVersion: v1
  kind: Pod
  metadata:
    name: web-1
    labels: {controller-revision-hash: "1-a", gang: "\e]0;pwned\a\e[31mred"}
`

// A label value in an error reached the terminal raw, escape sequences included.
// Every stderr line is now printable: the escapes are written in Go syntax.
func TestLabelValuesOnStderrCarryNoTerminalEscapes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Main([]string{"rollout", "-f", "-", "--mode", "gang", "--gang-label", "gang", "--column-label", "gang", "--columns", "only",
		"--target", "2-b"}, strings.NewReader(gangPods), &stdout, &stderr)
	msg := stderr.String()
	if code != ExitError || !strings.Contains(msg, "label gang: ") {
		t.Fatalf("exit %d, stderr %q; want the error naming the column label's value", code, msg)
	}
	if strings.ContainsAny(msg, "\x1b\a") {
		t.Errorf("stderr carries terminal control characters: %q", msg)
	}
	if !strings.Contains(msg, `\x1b]0;pwned\a\x1b[31mred`) {
		t.Errorf("stderr does not show the label value escaped: %q", msg)
	}
}

// --min-ready-seconds was converted to int32 unchecked: 4294967297 became 1.
func TestMinReadySecondsThatOverflowIsAUsageError(t *testing.T) {
	for _, v := range []string{"2147483648", "4294967297"} {
		var stdout, stderr bytes.Buffer
		code := Main([]string{"rollout", "-f", "-", "--target", "2-b", "--min-ready-seconds", v, "--now", "2025-02-14T17:30:00Z"},
			strings.NewReader(strings.ReplaceAll(gangPods, "gang: ", "x: ")), &stdout, &stderr)
		if code != ExitUsage || !strings.Contains(stderr.String(), "--min-ready-seconds "+v+": more than 2147483647") {
			t.Errorf("--min-ready-seconds %s: exit %d, stderr %q; want a usage error", v, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"rollout", "-f", "-", "--target", "2-b", "--min-ready-seconds", "2147483647", "--now", "2025-02-14T17:30:00Z"},
		strings.NewReader(strings.ReplaceAll(gangPods, "gang: ", "x: ")), &stdout, &stderr); code != ExitOK {
		t.Errorf("the largest int32: exit %d, stderr %q", code, stderr.String())
	}
}
