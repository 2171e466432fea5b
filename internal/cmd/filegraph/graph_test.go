package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kplan-dev/kplan/internal/proptest"
	"pgregory.net/rapid"
)

func TestMain(m *testing.M) { os.Exit(proptest.Run(m, proptest.DefaultChecks)) }

func TestMeasure(t *testing.T) {
	cases := []struct {
		name  string
		edges [][2]int // between files a.go, b.go, c.go, d.go of package p
		want  Metrics
	}{
		{"no edges: one level", nil, Metrics{Files: 4, Levels: 1}},
		{"a chain", [][2]int{{0, 1}, {1, 2}, {2, 3}}, Metrics{Files: 4, Levels: 4}},
		{"a cycle of two and a file above it", [][2]int{{0, 1}, {1, 0}, {2, 0}}, Metrics{Files: 4, Levels: 2, BackEdges: 2, Cycles: [][]string{{"a.go", "b.go"}}}},
		{"a cycle of all four", [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 2}}, Metrics{Files: 4, Levels: 1, BackEdges: 5, Cycles: [][]string{{"a.go", "b.go", "c.go", "d.go"}}}},
		{"a diamond", [][2]int{{0, 1}, {0, 2}, {1, 3}, {2, 3}}, Metrics{Files: 4, Levels: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Graph{Files: []string{"/p/a.go", "/p/b.go", "/p/c.go", "/p/d.go", "/q/e.go"}, Package: []string{"p", "p", "p", "p", "q"}}
			for _, e := range c.edges {
				g.Edges = append(g.Edges, Edge{e[0], e[1]})
			}
			g.Edges = append(g.Edges, Edge{4, 0}) // another package's edge changes nothing
			if diff := cmp.Diff(c.want, g.Measure("p")); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if got := g.CrossPackageCycles(); len(got) != 0 {
				t.Fatalf("cross-package cycles %v", got)
			}
		})
	}
	g := &Graph{Files: []string{"/p/a.go", "/q/b.go"}, Package: []string{"p", "q"}, Edges: []Edge{{0, 1}, {1, 0}}}
	if diff := cmp.Diff([][]string{{"p/a.go", "q/b.go"}}, g.CrossPackageCycles()); diff != "" {
		t.Fatalf("a cycle across packages (-want +got):\n%s", diff)
	}
}

// TestComponentsAndLevels: on arbitrary graphs, two nodes share a component exactly
// when each reaches the other, edges between components go from higher numbers to
// lower ones, back edges are the edges inside components, and levels is the longest
// path of the condensation (counted by brute force over the component order).
func TestComponentsAndLevels(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 9).Draw(t, "n")
		adj := make([][]int, n)
		if n > 0 {
			for _, e := range rapid.SliceOfN(rapid.SliceOfN(rapid.IntRange(0, n-1), 2, 2), 0, 25).Draw(t, "edges") {
				if e[0] != e[1] && !contains(adj[e[0]], e[1]) {
					adj[e[0]] = append(adj[e[0]], e[1])
				}
			}
		}
		reach := make([][]bool, n)
		for v := range n {
			reach[v] = make([]bool, n)
			reach[v][v] = true
			stack := []int{v}
			for len(stack) > 0 {
				u := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, w := range adj[u] {
					if !reach[v][w] {
						reach[v][w] = true
						stack = append(stack, w)
					}
				}
			}
		}
		comp := components(adj)
		inside := 0
		for v := range n {
			for w := range n {
				if same := reach[v][w] && reach[w][v]; same != (comp[v] == comp[w]) {
					t.Fatalf("nodes %d and %d: mutually reachable %v, same component %v", v, w, same, comp[v] == comp[w])
				}
			}
			for _, w := range adj[v] {
				if comp[v] < comp[w] {
					t.Fatalf("edge %d->%d goes from component %d up to %d", v, w, comp[v], comp[w])
				}
				if comp[v] == comp[w] {
					inside++
				}
			}
		}
		if got := backEdges(adj, comp); got != inside {
			t.Fatalf("back edges %d, want %d", got, inside)
		}
		// Longest path in the condensation: the longest chain of components c1 > c2 >
		// ... linked by edges, found by trying every component as a start.
		var longest func(c int) int
		longest = func(c int) int {
			best := 1
			for v := range n {
				if comp[v] != c {
					continue
				}
				for _, w := range adj[v] {
					if comp[w] != c {
						best = max(best, 1+longest(comp[w]))
					}
				}
			}
			return best
		}
		want := 0
		for v := range n {
			want = max(want, longest(comp[v]))
		}
		if got := levels(adj, comp); got != want {
			t.Fatalf("levels %d, want %d", got, want)
		}
	})
}

func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// TestLoad builds the graph of a small module: a method, a type, a function and a
// constant used across files make edges, and an import makes an edge between
// packages to the declaring file.
func TestLoad(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":      "module example.com/m\n\ngo 1.22\n",
		"p/a.go":      "package p\n\nfunc A() int { var t T; return t.M() + k }\n",
		"p/b.go":      "package p\n\ntype T struct{}\n",
		"p/c.go":      "package p\n\nfunc (T) M() int { return A() }\n",
		"p/d.go":      "package p\n\nconst k = 1\n",
		"q/q.go":      "package q\n\nimport \"example.com/m/p\"\n\nvar X = p.A()\n",
		"q/q2.go":     "package q\n\nvar Y = 2\n",
		"p/x_test.go": "package p\n\nvar _ = Y\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range g.Edges {
		got = append(got, g.Package[e.From][len("example.com/m/"):]+"/"+g.Name(e.From)+" -> "+g.Package[e.To][len("example.com/m/"):]+"/"+g.Name(e.To))
	}
	want := []string{"p/a.go -> p/b.go", "p/a.go -> p/c.go", "p/a.go -> p/d.go", "p/c.go -> p/a.go", "p/c.go -> p/b.go", "q/q.go -> p/a.go"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("edges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Metrics{Files: 4, Levels: 2, BackEdges: 2, Cycles: [][]string{{"a.go", "c.go"}}}, g.Measure("example.com/m/p")); diff != "" {
		t.Fatalf("p (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Metrics{Files: 2, Levels: 1}, g.Measure("example.com/m/q")); diff != "" {
		t.Fatalf("q (-want +got):\n%s", diff)
	}
}
