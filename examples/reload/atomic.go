package reload

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DataLink is the symlink, inside the data directory, that names the directory
// holding the files being served. Swapping it is the one atomic step of a write.
const DataLink = "..data"

// dataLinkTmp is the symlink created beside DataLink and renamed over it.
const dataLinkTmp = "..data_tmp"

// CheckFileName returns an error unless name can be written as a file directly
// inside the data directory: it must be a valid ConfigMap key (letters, digits, '-',
// '_' and '.', so no '/'), not "." or "..", and not start with ".." (names the
// writer keeps for itself). A hub is written by the API server on behalf of whoever
// may edit the ConfigMapSet; a key like "../../etc/profile" must never reach the file
// system.
func CheckFileName(name string) error {
	if errs := validation.IsConfigMapKey(name); len(errs) > 0 {
		return fmt.Errorf("file name %q: %s", name, strings.Join(errs, "; "))
	}
	if strings.HasPrefix(name, "..") {
		return fmt.Errorf("file name %q: names starting with \"..\" are reserved for the writer", name)
	}
	if filepath.Base(name) != name || !filepath.IsLocal(name) {
		return fmt.Errorf("file name %q: not a plain file name", name)
	}
	return nil
}

// WriteAtomic makes dir serve files, the way the kubelet's atomic writer updates
// ConfigMap volumes:
//
//  1. every name is checked (CheckFileName) before anything is written;
//  2. the files are written into a new directory dir/..YYYY_MM_DD_HH_MM_SS.NNNN;
//  3. the symlink dir/..data_tmp pointing at it is renamed over dir/..data (one
//     rename(2): a reader sees the old set of files or the new one, never a mix);
//  4. each file gets a visible symlink dir/name -> ..data/name; visible symlinks of
//     files no longer served are removed, then the previous directory.
//
// A reader that wants several files from one revision resolves dir/..data once and
// reads them from the directory it names. now names the new directory. It returns
// whether anything changed: files equal to those served are not rewritten.
func WriteAtomic(dir string, files map[string]string, now time.Time) (bool, error) {
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := CheckFileName(name); err != nil {
			return false, err
		}
	}
	oldTS, err := os.Readlink(filepath.Join(dir, DataLink))
	switch {
	case errors.Is(err, os.ErrNotExist):
		oldTS = ""
	case err != nil:
		return false, err
	}
	if oldTS != "" {
		same, err := serving(filepath.Join(dir, oldTS), files)
		if err != nil {
			return false, err
		}
		if same {
			return false, nil
		}
	}
	tsDir, err := os.MkdirTemp(dir, now.UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return false, err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(tsDir, name), []byte(content), 0o644); err != nil {
			_ = os.RemoveAll(tsDir)
			return false, err
		}
	}
	tmp := filepath.Join(dir, dataLinkTmp)
	_ = os.Remove(tmp) // left by a writer that died between symlink and rename
	if err := os.Symlink(filepath.Base(tsDir), tmp); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, DataLink)); err != nil {
		_ = os.Remove(tmp)
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	if err := syncDir(dir); err != nil {
		return true, err
	}
	// Visible names: create the new ones, then drop those no longer served.
	for name := range files {
		link := filepath.Join(dir, name)
		target := filepath.Join(DataLink, name)
		if t, err := os.Readlink(link); err == nil && t == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return true, err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true, err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") {
			if name != DataLink && name != filepath.Base(tsDir) && e.IsDir() {
				_ = os.RemoveAll(filepath.Join(dir, name)) // the previous revision
			}
			continue
		}
		if _, ok := files[name]; !ok && e.Type()&os.ModeSymlink != 0 {
			_ = os.Remove(filepath.Join(dir, name))
		}
	}
	return true, nil
}

// serving reports whether tsDir holds exactly files.
func serving(tsDir string, files map[string]string) (bool, error) {
	entries, err := os.ReadDir(tsDir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil || len(entries) != len(files) {
		return false, err
	}
	for _, e := range entries {
		want, ok := files[e.Name()]
		if !ok {
			return false, nil
		}
		got, err := os.ReadFile(filepath.Join(tsDir, e.Name()))
		if err != nil || string(got) != want {
			return false, err
		}
	}
	return true, nil
}

// ReadServed returns the files dir serves, read from the one directory ..data names
// (so from one revision), or nil when nothing is served yet. A writer removes the
// previous revision's directory after it switches ..data, so a read that overlaps a
// switch can find that directory half removed: ReadServed checks that ..data still
// names the directory it read and reads again when it does not, up to
// readServedAttempts times, after which it returns an error wrapping
// os.ErrNotExist.
func ReadServed(dir string) (map[string]string, error) {
	link := filepath.Join(dir, DataLink)
	for range readServedAttempts {
		ts, err := os.Readlink(link)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		out, err := readDir(filepath.Join(dir, ts))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		now, lerr := os.Readlink(link)
		if lerr == nil && now == ts {
			if err != nil { // ..data still names a directory that is not there
				return nil, fmt.Errorf("%s names %s: %w", link, ts, err)
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s: the served revision changed during each of %d reads: %w", link, readServedAttempts, os.ErrNotExist)
}

// readServedAttempts bounds how often ReadServed reads again while revisions switch.
const readServedAttempts = 10

// readDir reads every file of one revision's directory.
func readDir(tsDir string) (map[string]string, error) {
	entries, err := os.ReadDir(tsDir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(tsDir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = string(b)
	}
	return out, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
