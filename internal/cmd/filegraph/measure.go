package main

import (
	"slices"
	"sort"
)

// Metrics are one package's counts (see the command's doc).
type Metrics struct {
	Files, Levels, BackEdges int
	// Cycles lists the file names of each strongly connected component of more than
	// one file, sorted.
	Cycles [][]string
}

// Measure returns the metrics of package pkg's own files and the edges between them.
func (g *Graph) Measure(pkg string) Metrics {
	var nodes []int
	local := map[int]int{}
	for i, p := range g.Package {
		if p == pkg {
			local[i] = len(nodes)
			nodes = append(nodes, i)
		}
	}
	adj := make([][]int, len(nodes))
	for _, e := range g.Edges {
		a, okA := local[e.From]
		b, okB := local[e.To]
		if okA && okB {
			adj[a] = append(adj[a], b)
		}
	}
	comp := components(adj)
	m := Metrics{Files: len(nodes), Levels: levels(adj, comp), BackEdges: backEdges(adj, comp)}
	members := map[int][]string{}
	for v, c := range comp {
		members[c] = append(members[c], g.Name(nodes[v]))
	}
	for _, files := range members {
		if len(files) > 1 {
			sort.Strings(files)
			m.Cycles = append(m.Cycles, files)
		}
	}
	slices.SortFunc(m.Cycles, func(a, b []string) int { return slices.Compare(a, b) })
	return m
}

// CrossPackageCycles returns the strongly connected components of the whole module's
// file graph whose files belong to more than one package.
func (g *Graph) CrossPackageCycles() [][]string {
	adj := make([][]int, len(g.Files))
	for _, e := range g.Edges {
		adj[e.From] = append(adj[e.From], e.To)
	}
	comp := components(adj)
	pkgs := map[int]map[string]bool{}
	files := map[int][]string{}
	for v, c := range comp {
		if pkgs[c] == nil {
			pkgs[c] = map[string]bool{}
		}
		pkgs[c][g.Package[v]] = true
		files[c] = append(files[c], g.Package[v]+"/"+g.Name(v))
	}
	var out [][]string
	for c, ps := range pkgs {
		if len(ps) > 1 {
			sort.Strings(files[c])
			out = append(out, files[c])
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return out
}

// components returns the strongly connected component of every node (Tarjan's
// algorithm); components are numbered in reverse topological order: an edge between
// two components goes from a higher number to a lower one.
func components(adj [][]int) []int {
	n := len(adj)
	index, low, comp := make([]int, n), make([]int, n), make([]int, n)
	for i := range index {
		index[i], comp[i] = -1, -1
	}
	var stack []int
	onStack := make([]bool, n)
	next, count := 0, 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range adj[v] {
			if index[w] < 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = count
				if w == v {
					break
				}
			}
			count++
		}
	}
	for v := range adj {
		if index[v] < 0 {
			visit(v)
		}
	}
	return comp
}

// levels is the number of components on the longest path of the condensation (0 for
// no nodes).
func levels(adj [][]int, comp []int) int {
	count := 0
	for _, c := range comp {
		count = max(count, c+1)
	}
	// Components are numbered so that edges go from higher to lower numbers: depth
	// in increasing order.
	depth := make([]int, count)
	byComp := make([][]int, count)
	for v, c := range comp {
		byComp[c] = append(byComp[c], v)
	}
	best := 0
	for c := range count {
		d := 1
		for _, v := range byComp[c] {
			for _, w := range adj[v] {
				if comp[w] != c {
					d = max(d, depth[comp[w]]+1)
				}
			}
		}
		depth[c] = d
		best = max(best, d)
	}
	return best
}

// backEdges counts the edges inside components.
func backEdges(adj [][]int, comp []int) int {
	n := 0
	for v, ws := range adj {
		for _, w := range ws {
			if comp[v] == comp[w] {
				n++
			}
		}
	}
	return n
}
