package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The document reader skipped empty documents between "---" lines, so an error in the
// third document of "pod --- --- bad" named document 2. Documents are numbered as YAML
// numbers them: every "---" starts one; comments before the first "---" are none.
func TestAnErrorInTheThirdDocumentNamesDocumentThree(t *testing.T) {
	const bad = "kind: Pod\n"
	for _, tc := range []struct{ name, in, want string }{
		{"an empty second document", pod + "---\n---\n" + bad, "f: document 3: apiVersion of the Pod is missing"},
		{"a leading separator and an empty second document", "---\n" + pod + "---\n---\n" + bad, "f: document 3: apiVersion of the Pod is missing"},
		{"comments before the first separator and a blank second document", "# pods\n\n---\n" + pod + "---\n\n---\n" + bad, "f: document 3: apiVersion of the Pod is missing"},
		{"a comment-only second document", pod + "--- # nothing\n# still nothing\n---\n" + bad, "f: document 3: apiVersion of the Pod is missing"},
		{"CRLF line ends", strings.ReplaceAll(pod+"---\n---\n"+bad, "\n", "\r\n"), "f: document 3: apiVersion of the Pod is missing"},
		{"content after a separator", pod + "---\n--- {a: 1}\n", `f: document 3: content after the --- separator is not supported: "{a: 1}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f", []byte(tc.in))
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v, want %s", err, tc.want)
			}
		})
	}
	t.Run("objects after empty documents keep their number", func(t *testing.T) {
		objs, err := Parse("f", []byte("---\n---\n"+pod+"---\n---abc: not a separator\n"+strings.Replace(pod, "web-0", "web-1", 1)))
		if want := "f: document 2 (Pod default/web-0); f: document 3 (Pod default/web-1)"; err != nil || ids(objs) != want {
			t.Errorf("got %s, %v; want %s", ids(objs), err, want)
		}
	})
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A List of a million items was decoded in full (about 3.5 GB for a million small
// pods) before the object limit rejected it. Its nodes are counted first, without
// decoding, and it is rejected for them.
func TestAListOfAMillionItemsIsRejectedBeforeDecoding(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
	for i := range 1000000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{}")
	}
	b.WriteString("]}")
	data := []byte(b.String())
	var err error
	used := allocated(func() { _, err = Parse("big.json", data) })
	if err == nil || !strings.Contains(err.Error(), "big.json: document 1: about 2000004 YAML nodes, more than the 2000000 left of the limit") {
		t.Errorf("err = %v, want the node limit", err)
	}
	if used > 16<<20 {
		t.Errorf("allocated %d MB before rejecting %d MB of input", used>>20, len(data)>>20)
	}
}

// The limits were per file: ten files of 100k pods were each accepted. They apply to
// all inputs together now, and a List is counted before its items are split.
func TestLimitsApplyToAllInputsTogether(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	list := func(n int) string {
		return `{"apiVersion":"v1","kind":"List","items":[` + strings.Repeat(`{},`, n-1) + `{}]}`
	}
	t.Run("objects", func(t *testing.T) {
		one := write("one.yaml", pod)
		many := write("many.json", list(MaxObjects))
		_, err := Read(OSFS{}, []string{one, many}, nil)
		if want := many + ": document 1: the List has 100000 items, more than the 99999 objects left of the limit of 100000 for all inputs together"; err == nil || err.Error() != want {
			t.Errorf("err = %v, want %s", err, want)
		}
		if _, err := Read(OSFS{}, []string{many}, nil); err == nil || !strings.Contains(err.Error(), "document 1, item 1: kind is missing") {
			t.Errorf("alone, the list is within the limit (its items are then checked): %v", err)
		}
	})
	t.Run("nodes", func(t *testing.T) {
		// Indicators inside a string count too (the count is an upper bound), which
		// makes these files cheap to decode.
		third := write("third.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {x: '"+strings.Repeat("[", MaxNodes/3)+"'}\n")
		_, err := Read(OSFS{}, []string{third, third, third}, nil)
		if err == nil || !strings.HasPrefix(err.Error(), third+": document 1: about 666675 YAML nodes, more than the 666650 left of the limit of 2000000 for all inputs together") {
			t.Errorf("err = %v, want the node limit on the third file", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		small := write("small.yaml", pod)
		comments := bytes.Repeat([]byte("# "), MaxBytes/2)
		comments = append(comments[:MaxBytes-5], '\n')
		_, err := Read(OSFS{}, []string{"-", small}, bytes.NewReader(comments))
		if want := small + ": more than the 4 bytes left of the limit of 67108864 for all inputs together"; err == nil || err.Error() != want {
			t.Errorf("err = %v, want %s", err, want)
		}
		_, err = Read(OSFS{}, []string{small, "-"}, bytes.NewReader(comments))
		if want := "stdin: more than the " + strconv.Itoa(MaxBytes-len(pod)) + " bytes left of the limit of 67108864 for all inputs together"; err == nil || err.Error() != want {
			t.Errorf("err = %v, want %s", err, want)
		}
	})
}
