package apilist

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDescribeListsEveryExportedIdentifierWithoutParameterNames(t *testing.T) {
	const src = `package p

import "io"

type T string

const C T = "x"
const c = 1

var V = 3

type S struct {
	A int
	b int
	T
}

type I interface {
	io.Reader
	M(n int, rest ...string) (ok bool, err error)
	m()
}

func F[K comparable](k K, v ...int) error { return nil }

func (s *S) P(r io.Reader) {}
func (s S) Q() {}
func (s S) q() {}

type Al = S

type unexported struct{ X int }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&types.Config{Importer: importerFor(t)}).Check("example.com/p", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ // in the order of the package scope's names
		`type Al = S`,
		`const C T = "x"`,
		`func F[K comparable](K, ...int) error`,
		`type I interface`,
		`type I interface, embedded io.Reader`,
		`type I interface, M(int, ...string) (bool, error)`,
		`type S struct`,
		`type S struct, A int`,
		`type S struct, embedded T`,
		`method (*S) P(io.Reader)`,
		`method (S) Q()`,
		`type T string`,
		`var V int`,
	}
	got := describe(pkg)
	for i, l := range got {
		got[i] = strings.TrimPrefix(l, "pkg example.com/p, ")
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("describe (-want +got):\n%s", d)
	}
}

func importerFor(t *testing.T) types.Importer {
	t.Helper()
	return importerFunc(func(path string) (*types.Package, error) {
		if path != "io" {
			t.Fatalf("unexpected import %q", path)
		}
		io := types.NewPackage("io", "io")
		sig := types.NewSignatureType(nil, nil, nil,
			types.NewTuple(types.NewVar(token.NoPos, io, "p", types.NewSlice(types.Typ[types.Byte]))),
			types.NewTuple(types.NewVar(token.NoPos, io, "n", types.Typ[types.Int]),
				types.NewVar(token.NoPos, io, "err", types.Universe.Lookup("error").Type())), false)
		iface := types.NewInterfaceType([]*types.Func{types.NewFunc(token.NoPos, io, "Read", sig)}, nil).Complete()
		io.Scope().Insert(types.NewTypeName(token.NoPos, io, "Reader", nil))
		types.NewNamed(io.Scope().Lookup("Reader").(*types.TypeName), iface, nil)
		io.MarkComplete()
		return io, nil
	})
}

type importerFunc func(string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

func TestDiffNamesLinesOnEitherSide(t *testing.T) {
	tests := []struct {
		name      string
		want, got []string
		diff      string
	}{
		{"equal listings differ in nothing", []string{"a", "b"}, []string{"a", "b"}, ""},
		{"a removed line is -", []string{"a", "b", "c"}, []string{"a", "c"}, "-b"},
		{"an added line is +", []string{"a"}, []string{"a", "b"}, "+b"},
		{"a changed line is - then +", []string{"a", "c"}, []string{"b", "c"}, "-a\n+b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Diff(tt.want, tt.got); got != tt.diff {
				t.Errorf("diff = %q, want %q", got, tt.diff)
			}
		})
	}
}
