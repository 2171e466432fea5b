// Package apilist lists kplan's exported API: one line per exported constant,
// variable, function, type, struct field, interface method and method of every public
// package of the module, in the spirit of the Go project's api/ files. Signatures
// carry no parameter names (they are not part of the API) and spell every type with
// its package path; constants carry their values.
package apilist

import (
	"bytes"
	"encoding/json"
	"errors"
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

type goPackage struct {
	ImportPath string
	Name       string
	Export     string
	Module     *struct{ Path string }
}

// List returns the sorted API lines of every public package of the module in dir.
// It reads the compiler's export data (go list -export), so the listing is what a
// user's program sees.
func List(dir string) ([]string, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Name,Export,Module", "./...")
	cmd.Dir = dir
	raw, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list: %w\n%s", err, ee.Stderr)
		}
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

// Diff returns the lines only in want (prefixed "-") and only in got ("+"); both are
// sorted.
func Diff(want, got []string) string {
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
