// Command apilist prints kplan's exported API: one line per exported constant,
// variable, function, type, struct field, interface method and method of every
// public package of the module, sorted, in the spirit of the Go project's api/ files.
//
//	go run ./internal/cmd/apilist            # print the listing
//	go run ./internal/cmd/apilist -w api/kplan.txt   # rewrite the checked-in listing
//	go run ./internal/cmd/apilist -check api/kplan.txt  # fail if the code differs from it
//
// It reads the compiler's export data (go list -export), so the listing is exactly
// what a user's program sees: constants with their values, signatures with every type
// spelled with its package path.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

func main() {
	write := flag.String("w", "", "write the listing to this file")
	check := flag.String("check", "", "compare the listing with this file and fail on a difference")
	flag.Parse()
	lines, err := list(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "apilist:", err)
		os.Exit(2)
	}
	out := []byte(strings.Join(lines, "\n") + "\n")
	switch {
	case *write != "":
		if err := os.WriteFile(*write, out, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "apilist:", err)
			os.Exit(2)
		}
	case *check != "":
		want, err := os.ReadFile(*check)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apilist:", err)
			os.Exit(2)
		}
		if d := diff(strings.Split(strings.TrimSuffix(string(want), "\n"), "\n"), lines); d != "" {
			fmt.Fprintf(os.Stderr, "The exported API differs from %s (- listed, + in the code):\n%s\n"+
				"If the change is deliberate, run `go run ./internal/cmd/apilist -w %s` and name it in CHANGES.md.\n",
				*check, d, *check)
			os.Exit(1)
		}
	default:
		os.Stdout.Write(out)
	}
}

type goPackage struct {
	ImportPath string
	Name       string
	Export     string
	Module     *struct{ Path string }
}

// list returns the API lines of every public library package under dir.
func list(dir string) ([]string, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Name,Export,Module", "./...")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	exports := map[string]string{}
	var ours []goPackage
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == "github.com/kplan-dev/kplan" && p.Name != "main" && !internal(p.ImportPath) {
			ours = append(ours, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var lines []string
	for _, p := range ours {
		pkg, err := imp.Import(p.ImportPath)
		if err != nil {
			return nil, err
		}
		lines = append(lines, describe(pkg)...)
	}
	slices.Sort(lines)
	return slices.Compact(lines), nil
}

func internal(path string) bool {
	return strings.Contains(path+"/", "/internal/")
}

// describe lists pkg's exported API.
func describe(pkg *types.Package) []string {
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Path()
	}
	prefix := "pkg " + pkg.Path() + ", "
	var out []string
	add := func(s string) { out = append(out, prefix+s) }
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			add(fmt.Sprintf("const %s %s = %s", name, types.TypeString(o.Type(), qual), o.Val().ExactString()))
		case *types.Var:
			add(fmt.Sprintf("var %s %s", name, types.TypeString(o.Type(), qual)))
		case *types.Func:
			add("func " + name + signature(o.Type().(*types.Signature), qual))
		case *types.TypeName:
			out = append(out, describeType(prefix, o, qual)...)
		}
	}
	return out
}

func describeType(prefix string, o *types.TypeName, qual types.Qualifier) []string {
	name := o.Name()
	var out []string
	add := func(s string) { out = append(out, prefix+s) }
	if o.IsAlias() {
		add(fmt.Sprintf("type %s = %s", name, types.TypeString(types.Unalias(o.Type()), qual)))
		return out
	}
	named := o.Type().(*types.Named)
	tparams := ""
	if tp := named.TypeParams(); tp.Len() > 0 {
		var ps []string
		for i := range tp.Len() {
			p := tp.At(i)
			ps = append(ps, p.Obj().Name()+" "+types.TypeString(p.Constraint(), qual))
		}
		tparams = "[" + strings.Join(ps, ", ") + "]"
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		add(fmt.Sprintf("type %s%s struct", name, tparams))
		for i := range u.NumFields() {
			f := u.Field(i)
			if !f.Exported() {
				continue
			}
			if f.Embedded() {
				add(fmt.Sprintf("type %s struct, embedded %s", name, types.TypeString(f.Type(), qual)))
			} else {
				add(fmt.Sprintf("type %s struct, %s %s", name, f.Name(), types.TypeString(f.Type(), qual)))
			}
		}
	case *types.Interface:
		add(fmt.Sprintf("type %s%s interface", name, tparams))
		for i := range u.NumEmbeddeds() {
			add(fmt.Sprintf("type %s interface, embedded %s", name, types.TypeString(u.EmbeddedType(i), qual)))
		}
		for i := range u.NumExplicitMethods() {
			m := u.ExplicitMethod(i)
			if m.Exported() {
				add(fmt.Sprintf("type %s interface, %s%s", name, m.Name(), signature(m.Type().(*types.Signature), qual)))
			}
		}
	default:
		add(fmt.Sprintf("type %s%s %s", name, tparams, types.TypeString(u, qual)))
	}
	for i := range named.NumMethods() {
		m := named.Method(i)
		if !m.Exported() {
			continue
		}
		sig := m.Type().(*types.Signature)
		recv := name
		if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
			recv = "*" + name
		}
		add(fmt.Sprintf("method (%s) %s%s", recv, m.Name(), signature(sig, qual)))
	}
	return out
}

// signature spells sig without parameter names, which are not part of the API:
// "(int, ...string) (bool, error)". Type parameters of a generic function come first.
func signature(sig *types.Signature, qual types.Qualifier) string {
	var b strings.Builder
	if tp := sig.TypeParams(); tp.Len() > 0 {
		var ps []string
		for i := range tp.Len() {
			p := tp.At(i)
			ps = append(ps, p.Obj().Name()+" "+types.TypeString(p.Constraint(), qual))
		}
		b.WriteString("[" + strings.Join(ps, ", ") + "]")
	}
	tuple := func(t *types.Tuple, variadic bool) []string {
		var out []string
		for i := range t.Len() {
			ty := t.At(i).Type()
			if variadic && i == t.Len()-1 {
				out = append(out, "..."+types.TypeString(ty.(*types.Slice).Elem(), qual))
			} else {
				out = append(out, types.TypeString(ty, qual))
			}
		}
		return out
	}
	b.WriteString("(" + strings.Join(tuple(sig.Params(), sig.Variadic()), ", ") + ")")
	switch res := tuple(sig.Results(), false); len(res) {
	case 0:
	case 1:
		b.WriteString(" " + res[0])
	default:
		b.WriteString(" (" + strings.Join(res, ", ") + ")")
	}
	return b.String()
}

// diff returns the lines only in want (prefixed "-") and only in got ("+"); both are
// sorted.
func diff(want, got []string) string {
	var b strings.Builder
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || i < len(want) && want[i] < got[j]:
			fmt.Fprintf(&b, "-%s\n", want[i])
			i++
		case i == len(want) || got[j] < want[i]:
			fmt.Fprintf(&b, "+%s\n", got[j])
			j++
		default:
			i++
			j++
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
