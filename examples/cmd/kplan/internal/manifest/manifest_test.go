package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

const pod = `apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: default
spec:
  containers:
  - name: c
    image: busybox
`

func ids(objs []Object) string {
	var s []string
	for i := range objs {
		s = append(s, objs[i].String())
	}
	return strings.Join(s, "; ")
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"a single object", pod, "f: document 1 (Pod default/web-0)"},
		{"a single object as JSON", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`, "f: document 1 (ConfigMap c)"},
		{"multi-document with empty and comment-only documents",
			"---\n" + pod + "---\n# nothing\n---\n" + strings.ReplaceAll(pod, "web-0", "web-1"),
			"f: document 1 (Pod default/web-0); f: document 3 (Pod default/web-1)"},
		{"a v1 List as kubectl prints it",
			"apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n    namespace: ns\n- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata:\n    name: web\n",
			"f: document 1, item 1 (Pod ns/a); f: document 1, item 2 (StatefulSet web)"},
		{"a typed list", `{"apiVersion":"v1","kind":"PodList","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}]}`, "f: document 1, item 1 (Pod a)"},
		{"an empty list", `{"apiVersion":"v1","kind":"List","items":[]}`, ""},
		{"an empty file", "", ""},
		{"a document end marker and comments", "# pods\n" + pod + "...\n", "f: document 1 (Pod default/web-0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Parse("f", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(objs); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"not YAML", "a: [b\n", "f: document 1: not valid YAML: "},
		{"a scalar", "hello\n", "f: document 1: not an object"},
		{"a list at the top", "- a\n- b\n", "f: document 1: not an object"},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: a\n", "f: document 1: kind is missing"},
		{"kind not a string", "apiVersion: v1\nkind: [Pod]\n", "f: document 1: kind is not a string"},
		{"a newline in the kind", "apiVersion: v1\nkind: \"Po\\nd\"\nmetadata:\n  name: a\n", `f: document 1: kind "Po\nd" is not a kind`},
		{"no apiVersion", "kind: Pod\nmetadata:\n  name: a\n", "f: document 1: apiVersion of the Pod is missing"},
		{"a space in apiVersion", "apiVersion: v 1\nkind: Pod\nmetadata:\n  name: a\n", `f: document 1: apiVersion "v 1" of the Pod is not an API version`},
		{"no metadata", "apiVersion: v1\nkind: Pod\n", "f: document 1: metadata of the Pod is missing or not a mapping"},
		{"no name", "apiVersion: v1\nkind: Pod\nmetadata:\n  namespace: a\n", "f: document 1: metadata.name of the Pod is missing"},
		{"a bad name", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Web_0\n", `f: document 1: Pod: metadata.name "Web_0" is not a valid object name`},
		{"a bad namespace", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  namespace: \"x y\"\n", `f: document 1: Pod a: metadata.namespace "x y" is not a valid namespace`},
		{"a name that is a number", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: 7\n", "f: document 1: Pod: metadata.name is not a string"},
		{"a bad list item", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n- 3\n", "f: document 1, item 2: not an object"},
		{"a list in a list", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items: []\n", "f: document 1, item 1: a List inside a list is not supported"},
		{"items not a list", "apiVersion: v1\nkind: List\nitems: 3\n", "f: document 1: items of the List is not a list"},
		{"a List without items", "apiVersion: v1\nkind: List\n", "f: document 1: the List has no items"},
		{"the second document is bad", pod + "---\nkind: Pod\n", "f: document 2: apiVersion of the Pod is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Parse("f", []byte(tc.in))
			if err == nil {
				t.Fatalf("no error; got %s", ids(objs))
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want it to start with %q", err, tc.want)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	objs, err := Parse("f", []byte(pod))
	if err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	if err := objs[0].Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "web-0" || len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != "busybox" {
		t.Errorf("decoded %+v", p)
	}
	bad, err := Parse("f", []byte(strings.Replace(pod, "containers:\n  - name: c\n    image: busybox", "containers: 3", 1)))
	if err != nil {
		t.Fatal(err)
	}
	err = bad[0].Decode(&p)
	want := "f: document 1 (Pod default/web-0): spec.containers: cannot use a JSON number as []v1.Container"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestDedupe(t *testing.T) {
	a, _ := Parse("a.yaml", []byte(pod))
	b, _ := Parse("b.yaml", []byte(strings.Replace(pod, "  namespace: default\n", "", 1)))
	other, _ := Parse("c.yaml", []byte(strings.Replace(pod, "web-0", "web-1", 1)))
	if err := Dedupe(append(append([]Object{}, a...), other...), "default"); err != nil {
		t.Errorf("distinct pods: %v", err)
	}
	err := Dedupe(append(a, b...), "default")
	want := "b.yaml: document 1 (Pod web-0): the same object is also in a.yaml: document 1"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.yaml", strings.Replace(pod, "web-0", "web-b", 1))
	write("a.yml", strings.Replace(pod, "web-0", "web-a", 1))
	write("notes.txt", "not a manifest")
	objs, err := Read(OSFS{}, []string{dir, "-"}, strings.NewReader(pod))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "a.yml") + ": document 1 (Pod default/web-a); " + filepath.Join(dir, "b.yaml") +
		": document 1 (Pod default/web-b); stdin: document 1 (Pod default/web-0)"
	if got := ids(objs); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"a missing file", []string{filepath.Join(dir, "missing.yaml")}, filepath.Join(dir, "missing.yaml") + ": no such file or directory"},
		{"stdin twice", []string{"-", "-"}, "stdin (-f -) given twice"},
		{"a directory without manifests", []string{t.TempDir()}, ": no *.yaml, *.yml or *.json files in the directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(OSFS{}, tc.paths, strings.NewReader(""))
			if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
				t.Errorf("error %v, want it to end with %q", err, tc.want)
			}
		})
	}
	big := bytes.Repeat([]byte("#"), MaxBytes+1)
	if _, err := Read(OSFS{}, []string{"-"}, bytes.NewReader(big)); err == nil || !strings.Contains(err.Error(), "bytes left of the limit of") {
		t.Errorf("oversized stdin: %v", err)
	}
}

// FuzzParseManifests feeds arbitrary bytes to Parse: it must never panic, every
// error must be one line that names the source, and every object it returns must
// have a usable identity and decode as JSON again.
func FuzzParseManifests(f *testing.F) {
	for _, seed := range []string{
		pod,
		"---\n" + pod + "---\n" + pod,
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}]}`,
		"apiVersion: v1\nkind: \"Po\\nd\"\nmetadata:\n  name: a\n", // the newline-in-kind bug
		"apiVersion: \"v1\\n\"\nkind: Pod\nmetadata:\n  name: a\n",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"a\\nb\"\n  namespace: \"\\u2028\"\n",
		"apiVersion: v1\nkind: List\nitems:\n- 3\n- [a]\n- {kind: List, apiVersion: v1, items: []}\n",
		"a: [b\n", "- a\n", "null\n", "--- # c\n...\n", "\xff\xfe", "kind: &a Pod\napiVersion: *a\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: d}\ndata: {k: \"line1\\nline2\"}\n",
		"# c\n---\n---\r\n" + pod + "--- \xff\n", "---abc\n---\t# c\n%YAML 1.2\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Parse("in.yaml", data)
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "in.yaml: ") {
				t.Fatalf("error is not one line naming the file: %q", msg)
			}
			if !utf8.ValidString(msg) {
				t.Fatalf("error is not valid UTF-8: %q", msg)
			}
			return
		}
		for i := range objs {
			o := &objs[i]
			s := o.String()
			if strings.ContainsAny(s, "\n\r") || o.Kind == "" || o.Name == "" || o.APIVersion == "" {
				t.Fatalf("object %d has an unusable identity: %q", i, s)
			}
			var m map[string]any
			if err := o.Decode(&m); err != nil {
				t.Fatalf("object %d does not decode: %v", i, err)
			}
		}
	})
}
