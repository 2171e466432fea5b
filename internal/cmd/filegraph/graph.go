package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
)

// Graph is the module's file graph. Files are numbered; Package[i] is file i's
// import path.
type Graph struct {
	Files    []string // absolute paths
	Package  []string
	Packages []string // the module's packages, sorted
	Edges    []Edge   // sorted, without duplicates or self edges
	module   string
}

// Edge says file From uses a name declared in file To.
type Edge struct{ From, To int }

// Name is file i as package/file.go.
func (g *Graph) Name(i int) string { return filepath.Base(g.Files[i]) }

type listed struct {
	ImportPath, Name, Dir, Export string
	GoFiles                       []string
	Module                        *struct{ Path string }
}

// Load builds the file graph of the module in dir from its sources, type-checked
// against the compiler's export data of its imports (go list -export).
func Load(dir string) (*Graph, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Name,Dir,Export,GoFiles,Module", "./...")
	cmd.Dir = dir
	raw, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list: %w\n%s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list: %w", err)
	}
	modCmd := exec.Command("go", "list", "-m")
	modCmd.Dir = dir
	mod, err := modCmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %w", err)
	}
	g := &Graph{module: string(bytes.TrimSpace(mod))}
	exports := map[string]string{}
	var ours []listed
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == g.module {
			ours = append(ours, p)
		}
	}
	index := map[string]int{} // absolute file path -> node
	for _, p := range ours {
		g.Packages = append(g.Packages, p.ImportPath)
		for _, f := range p.GoFiles {
			index[filepath.Join(p.Dir, f)] = len(g.Files)
			g.Files = append(g.Files, filepath.Join(p.Dir, f))
			g.Package = append(g.Package, p.ImportPath)
		}
	}
	sort.Strings(g.Packages)
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	seen := map[Edge]bool{}
	for _, p := range ours {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: imp}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			return nil, fmt.Errorf("%s: %w", p.ImportPath, err)
		}
		for id, obj := range info.Uses {
			if obj.Pkg() == nil || !obj.Pos().IsValid() {
				continue // universe, or no position
			}
			from, ok := index[fset.Position(id.Pos()).Filename]
			if !ok {
				continue // a generated or cgo file
			}
			to, ok := index[fset.Position(obj.Pos()).Filename]
			if !ok || to == from {
				continue // another module's, or this file's
			}
			if e := (Edge{from, to}); !seen[e] {
				seen[e] = true
				g.Edges = append(g.Edges, e)
			}
		}
	}
	slices.SortFunc(g.Edges, func(a, b Edge) int {
		if a.From != b.From {
			return a.From - b.From
		}
		return a.To - b.To
	})
	return g, nil
}
