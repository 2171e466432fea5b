package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Read reads every object of the given paths: files, directories (their *.yaml,
// *.yml and *.json files, in name order, not recursive) or "-" for stdin (at most
// once). The limits (MaxBytes, MaxObjects, MaxNodes) apply to all of them together,
// and no file is read past what is left of MaxBytes.
func Read(fsys FS, paths []string, stdin io.Reader) ([]Object, error) {
	var all []Object
	b := fullBudget()
	usedStdin := false
	for _, p := range paths {
		if p == "-" {
			if usedStdin {
				return nil, fmt.Errorf("stdin (-f -) given twice")
			}
			usedStdin = true
			data, err := io.ReadAll(io.LimitReader(stdin, int64(b.bytes)+1))
			if err != nil {
				return nil, fmt.Errorf("stdin: %v", err)
			}
			objs, err := parse("stdin", data, b)
			if err != nil {
				return nil, err
			}
			all = append(all, objs...)
			continue
		}
		files, err := fsys.Expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := fsys.ReadFile(f, b.bytes)
			if err != nil {
				return nil, err
			}
			objs, err := parse(f, data, b)
			if err != nil {
				return nil, err
			}
			all = append(all, objs...)
		}
	}
	return all, nil
}

// FS is the file system Read uses.
type FS interface {
	// Expand returns the files a path names: itself, or a directory's manifests.
	Expand(path string) ([]string, error)
	// ReadFile reads at most limit+1 bytes of a file (one more than allowed, so the
	// caller sees that the file is too large).
	ReadFile(path string, limit int) ([]byte, error)
}

// OSFS is the operating system's file system.
type OSFS struct{}

// Expand implements FS.
func (OSFS) Expand(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, errors.New(pathErr(path, err))
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, errors.New(pathErr(path, err))
	}
	var files []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml, *.yml or *.json files in the directory", path)
	}
	return files, nil
}

// ReadFile implements FS.
func (OSFS) ReadFile(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.New(pathErr(path, err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, errors.New(pathErr(path, err))
	}
	return data, nil
}

// pathErr says what went wrong with path without repeating it.
func pathErr(path string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Sprintf("%s: %v", path, err)
}
