package cli

import (
	"bytes"
	"strings"
	"testing"
)

// Pods as kthena creates them (ModelServing labels, no ownerReferences) are planned;
// a pod that belongs to no group is named in a warning on stderr, and the plan is
// still printed with exit code 0.
func TestRankTableWarnsAboutPodsInNoGroup(t *testing.T) {
	t.Chdir(casesDir)
	for _, c := range []struct {
		name   string
		args   []string
		groups bool
		warn   []string
	}{
		{"by the owner label", nil, true, []string{
			`kplan ranktable: warning: pod default/llama-0-worker-0-0 has no controller ownerReference and its label modelserving.volcano.sh/name is "llama", not "qwen-inference", so it is in no group of ModelServing default/qwen-inference (PodNotOwned)`,
		}},
		{"by ownerReferences only", []string{"--owner-label="}, false, []string{
			"kplan ranktable: warning: pod default/qwen-inference-0-worker-0-0 has no controller ownerReference, so it is in no group of ModelServing default/qwen-inference (PodNotOwned)",
			"kplan ranktable: warning: pod default/qwen-inference-0-worker-0-1 has no controller ownerReference, so it is in no group of ModelServing default/qwen-inference (PodNotOwned)",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"ranktable", "-f", "manifests/ranktable-kthena", "-o", "json"}, c.args...)
			if code := Main(args, bytes.NewReader(nil), &stdout, &stderr); code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			for _, w := range c.warn {
				if !strings.Contains(stderr.String(), w+"\n") {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if got := strings.Contains(stdout.String(), `"phase": "Completed"`); got != c.groups {
				t.Errorf("a completed group: %v, want %v:\n%s", got, c.groups, stdout.String())
			}
		})
	}
}

// Warnings quote what a terminal would act on.
func TestWarningsEscapeControlCharacters(t *testing.T) {
	if got, want := printable("pod \x1b[2Jx\tÿ\xff"), `pod \x1b[2Jx\tÿ\xff`; got != want {
		t.Errorf("printable = %q, want %q", got, want)
	}
}
