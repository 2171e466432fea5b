// Command filegraph measures the file dependency graph of the module's packages.
//
//	go run ./internal/cmd/filegraph [-C dir] [-v] [import path ...]
//
// Nodes are the non-test .go files of the module in dir (default "."). There is an
// edge from file A to file B when A uses a name declared in B: a package-level
// constant, variable, type or function, a method or a struct field, resolved by
// go/types (an edge inside a package), or a name B's package declares that A imports
// (an edge between packages). For each package named (default: all of the module's),
// it prints:
//
//   - files: the package's non-test .go files;
//   - levels: the number of files on the longest path of the package's condensation
//     (its graph with every strongly connected component contracted to one node),
//     so a package whose files use nothing of each other has 1 level;
//   - back edges: the edges between two files of the same strongly connected
//     component, that is the edges that lie on a cycle of files; a package whose
//     files form no cycle has none;
//   - cycles: the strongly connected components of more than one file.
//
// It fails (exit status 1) when a cycle of files crosses a package boundary, which
// the whole module's graph must not have. With -v it prints every edge.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	dir := flag.String("C", ".", "the module's directory")
	verbose := flag.Bool("v", false, "print every edge")
	flag.Parse()
	g, err := Load(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "filegraph:", err)
		os.Exit(2)
	}
	want := map[string]bool{}
	for _, a := range flag.Args() {
		want[a] = true
	}
	for _, p := range g.Packages {
		if len(want) > 0 && !want[p] {
			continue
		}
		m := g.Measure(p)
		fmt.Printf("%s: %d files, %d levels, %d back edges\n", p, m.Files, m.Levels, m.BackEdges)
		for _, c := range m.Cycles {
			fmt.Printf("  cycle: %s\n", strings.Join(c, " "))
		}
		if *verbose {
			for _, e := range g.Edges {
				if g.Package[e.From] == p {
					fmt.Printf("  %s -> %s\n", g.Name(e.From), g.Name(e.To))
				}
			}
		}
	}
	if c := g.CrossPackageCycles(); len(c) > 0 {
		for _, files := range c {
			fmt.Fprintf(os.Stderr, "filegraph: a cycle of files crosses packages: %s\n", strings.Join(files, " "))
		}
		os.Exit(1)
	}
}
