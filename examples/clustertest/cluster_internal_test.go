package clustertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kplan-dev/kplan/examples/internal/testenv"
)

// TestLWSWebhooks reads LWS's webhook configurations from the module cache as its
// kustomization builds them.
func TestLWSWebhooks(t *testing.T) {
	src, err := testenv.LWSSourceDir(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mutating, validating, err := lwsWebhooks(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := mutating[0].Name + " " + validating[0].Name; got != "lws-mutating-webhook-configuration lws-validating-webhook-configuration" {
		t.Errorf("names %q, want the lws- prefix of config/default", got)
	}
	pods := 0
	for _, w := range mutating[0].Webhooks {
		if w.Name == "mpod.kb.io" {
			pods++
			if w.ObjectSelector == nil || len(w.ObjectSelector.MatchExpressions) != 1 || w.ObjectSelector.MatchExpressions[0].Key != LabelName {
				t.Errorf("mutating pod webhook: objectSelector %v, want pods with %s (mutating-patch.yaml)", w.ObjectSelector, LabelName)
			}
		}
	}
	for _, w := range validating[0].Webhooks {
		if w.Name == "vpod.kb.io" {
			pods++
			if w.ObjectSelector == nil || len(w.ObjectSelector.MatchExpressions) != 1 || w.ObjectSelector.MatchExpressions[0].Key != LabelName {
				t.Errorf("validating pod webhook: objectSelector %v, want pods with %s (validating-patch.yaml)", w.ObjectSelector, LabelName)
			}
		}
	}
	if pods != 2 {
		t.Errorf("%d pod webhooks, want a mutating and a validating one", pods)
	}
}

func TestReplaceWebhooks(t *testing.T) {
	write := func(t *testing.T, content string) string {
		p := filepath.Join(t.TempDir(), "patch.yaml")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type hook struct {
		Name string `json:"name"`
	}
	t.Run("a replace of a webhook takes the value", func(t *testing.T) {
		hooks := []hook{{"a"}, {"b"}}
		if err := replaceWebhooks(write(t, "- op: replace\n  path: /webhooks/1\n  value:\n    name: c\n"), hooks); err != nil {
			t.Fatal(err)
		}
		if hooks[0].Name != "a" || hooks[1].Name != "c" {
			t.Errorf("hooks %v, want [a c]", hooks)
		}
	})
	for _, c := range []struct{ name, patch string }{
		{"another operation", "- op: add\n  path: /webhooks/0\n  value:\n    name: c\n"},
		{"another path", "- op: replace\n  path: /metadata/name\n  value:\n    name: c\n"},
		{"an index out of range", "- op: replace\n  path: /webhooks/2\n  value:\n    name: c\n"},
		{"a negative index", "- op: replace\n  path: /webhooks/-1\n  value:\n    name: c\n"},
	} {
		t.Run(c.name+" is refused", func(t *testing.T) {
			err := replaceWebhooks(write(t, c.patch), []hook{{"a"}, {"b"}})
			if err == nil || !strings.Contains(err.Error(), "unsupported operation") {
				t.Errorf("err = %v, want an unsupported operation", err)
			}
		})
	}
	t.Run("a missing file is an error", func(t *testing.T) {
		if err := replaceWebhooks(filepath.Join(t.TempDir(), "none.yaml"), []hook{}); err == nil {
			t.Error("no error")
		}
	})
}
