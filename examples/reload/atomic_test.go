package reload_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/examples/reload"
)

// revisionFiles returns n files whose every content names rev, so a reader can tell
// which revision each file came from.
func revisionFiles(rev string, n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("f%d.conf", i)] = strings.Repeat(rev+"\n", 1000)
	}
	return out
}

func TestWriteAtomicServesFilesThroughDataLink(t *testing.T) {
	dir := t.TempDir()
	v1 := map[string]string{"a.conf": "1", "b.conf": "1"}
	changed, err := reload.WriteAtomic(dir, v1, time.Unix(0, 0))
	if err != nil || !changed {
		t.Fatalf("first write: changed %v, err %v", changed, err)
	}
	for name, want := range v1 {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", name, got, err, want)
		}
		if target, err := os.Readlink(filepath.Join(dir, name)); err != nil || target != filepath.Join(reload.DataLink, name) {
			t.Errorf("%s links to %q (%v), want %s", name, target, err, filepath.Join(reload.DataLink, name))
		}
	}
	t.Run("the same files are not rewritten", func(t *testing.T) {
		before, _ := os.Readlink(filepath.Join(dir, reload.DataLink))
		changed, err := reload.WriteAtomic(dir, maps.Clone(v1), time.Unix(1, 0))
		after, _ := os.Readlink(filepath.Join(dir, reload.DataLink))
		if err != nil || changed || before != after {
			t.Errorf("changed %v, err %v, ..data %s -> %s", changed, err, before, after)
		}
	})
	t.Run("a new revision replaces files, drops removed ones and the old directory", func(t *testing.T) {
		v2 := map[string]string{"a.conf": "2", "c.conf": "2"}
		if _, err := reload.WriteAtomic(dir, v2, time.Unix(2, 0)); err != nil {
			t.Fatal(err)
		}
		got, err := reload.ReadServed(dir)
		if err != nil || !maps.Equal(got, v2) {
			t.Errorf("served %v (%v), want %v", got, err, v2)
		}
		if _, err := os.Lstat(filepath.Join(dir, "b.conf")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("b.conf is still visible: %v", err)
		}
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		// ..data, one timestamped directory, a.conf, c.conf.
		if len(names) != 4 {
			t.Errorf("directory holds %v, want ..data, one ..<timestamp> directory and the two files", names)
		}
	})
}

func TestWriteAtomicRefusesEscapingNames(t *testing.T) {
	for _, name := range []string{"../escape", "../../etc/profile", "a/b", "/etc/passwd", "..", ".", "", "..data", "..2026_01_01", "a\x00b", "sub/../x"} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "data")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			changed, err := reload.WriteAtomic(dir, map[string]string{"ok.conf": "x", name: "pwned"}, time.Now())
			if err == nil || changed {
				t.Fatalf("WriteAtomic accepted %q: changed %v, err %v", name, changed, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
				t.Errorf("error %q does not name the file %q", err, name)
			}
			// Nothing at all was written, inside the directory or beside it.
			for _, d := range []string{root, dir} {
				entries, _ := os.ReadDir(d)
				if want := map[string]int{root: 1, dir: 0}[d]; len(entries) != want {
					t.Errorf("%s holds %d entries after a refused write, want %d", d, len(entries), want)
				}
			}
		})
	}
}

// TestWriteAtomicConcurrentReaderNeverSeesAMix: while revisions alternate, readers
// that resolve ..data once and read every file from there always get all the files
// of exactly one revision, and readers of one visible file never get a partial one.
func TestWriteAtomicConcurrentReaderNeverSeesAMix(t *testing.T) {
	dir := t.TempDir()
	const files = 8
	if _, err := reload.WriteAtomic(dir, revisionFiles("r0", files), time.Now()); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, mixes atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstMix string
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				got, err := reload.ReadServed(dir)
				if errors.Is(err, os.ErrNotExist) {
					continue // the directory was replaced after we resolved it: retry
				}
				if err != nil {
					t.Error(err)
					return
				}
				revs := map[string]bool{}
				for _, content := range got {
					revs[strings.SplitN(content, "\n", 2)[0]] = true
					if len(content) != len(got["f0.conf"]) {
						revs["partial"] = true
					}
				}
				reads.Add(1)
				if len(got) != files || len(revs) != 1 {
					mixes.Add(1)
					mu.Lock()
					if firstMix == "" {
						firstMix = fmt.Sprintf("%d files from revisions %v", len(got), revs)
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Go(func() {
		for !stop.Load() {
			b, err := os.ReadFile(filepath.Join(dir, "f3.conf"))
			if err != nil {
				continue
			}
			if len(b) != 3000 {
				mixes.Add(1)
			}
		}
	})
	for i := 1; i <= 300; i++ {
		if _, err := reload.WriteAtomic(dir, revisionFiles(fmt.Sprintf("r%d", i%2), files), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if mixes.Load() > 0 {
		t.Fatalf("%d of %d reads saw a mix of revisions, first: %s", mixes.Load(), reads.Load(), firstMix)
	}
	if reads.Load() == 0 {
		t.Fatal("no read completed")
	}
	t.Logf("%d consistent reads across 300 switches", reads.Load())
}

// TestReadServedNamesAMissingDirectory: a ..data that names a directory that is not
// there is reported as such, not as a revision that kept changing.
func TestReadServedNamesAMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("..gone", filepath.Join(dir, reload.DataLink)); err != nil {
		t.Fatal(err)
	}
	_, err := reload.ReadServed(dir)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "names ..gone") {
		t.Fatalf("ReadServed with a dangling ..data: %v", err)
	}
}
