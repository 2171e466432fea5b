// The budget's checks inserted into parsed templates: the parse tree is rewritten at
// load so that every range, template call and printing action charges the execution's
// budget before it runs, and recursive templates are rejected.

package tmpl

import (
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"strings"
	"text/template"
	"text/template/parse"
)

// Functions the loader inserts into parsed templates; users cannot name them usefully
// (they only pass their argument through).
const (
	// rangeFunc ends the pipeline of every range: it charges the iterations times the
	// cost of the body before the range starts.
	rangeFunc = "_kplanRange"
	// callFunc ends the pipeline of every template call: it charges the called
	// template's cost.
	callFunc = "_kplanCall"
	// outFunc ends every printing action whose value is not known to be a string, a
	// number or a bool: it walks the value (bounded depth and size) before fmt prints
	// it.
	outFunc = "_kplanOut"
	// iterationWork is the work of one range iteration besides its body's.
	iterationWork = 2
	// templateCallWork is the work of one template call besides the called
	// template's body (text/template copies its state per call).
	templateCallWork = 64
)

// visit calls f on every node under n.
func visit(n parse.Node, f func(parse.Node)) {
	if n == nil || reflect.ValueOf(n).IsNil() {
		return
	}
	f(n)
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			visit(c, f)
		}
	case *parse.ActionNode:
		visit(n.Pipe, f)
	case *parse.PipeNode:
		for _, c := range n.Cmds {
			visit(c, f)
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			visit(a, f)
		}
	case *parse.ChainNode:
		visit(n.Node, f)
	case *parse.IfNode:
		visit(n.Pipe, f)
		visit(n.List, f)
		visit(n.ElseList, f)
	case *parse.RangeNode:
		visit(n.Pipe, f)
		visit(n.List, f)
		visit(n.ElseList, f)
	case *parse.WithNode:
		visit(n.Pipe, f)
		visit(n.List, f)
		visit(n.ElseList, f)
	case *parse.TemplateNode:
		visit(n.Pipe, f)
	}
}

// nodeCost is the work of executing n once, about one unit per node, without the
// bodies of ranges and called templates (their checks charge them per execution).
func nodeCost(n parse.Node) int64 {
	if n == nil || reflect.ValueOf(n).IsNil() {
		return 0
	}
	switch n := n.(type) {
	case *parse.ListNode:
		var c int64
		for _, x := range n.Nodes {
			c += nodeCost(x)
		}
		return c
	case *parse.ActionNode:
		return 1 + nodeCost(n.Pipe)
	case *parse.PipeNode:
		var c int64
		for _, cmd := range n.Cmds {
			c += nodeCost(cmd)
		}
		return c
	case *parse.CommandNode:
		c := int64(1)
		for _, a := range n.Args {
			c += nodeCost(a)
		}
		return c
	case *parse.ChainNode:
		return 1 + nodeCost(n.Node)
	case *parse.IfNode:
		return 1 + nodeCost(n.Pipe) + nodeCost(n.List) + nodeCost(n.ElseList)
	case *parse.WithNode:
		return 1 + nodeCost(n.Pipe) + nodeCost(n.List) + nodeCost(n.ElseList)
	case *parse.RangeNode:
		return 1 + nodeCost(n.Pipe)
	case *parse.TemplateNode:
		return 1 + nodeCost(n.Pipe)
	}
	return 1
}

// checkRecursion rejects templates that call themselves, directly or not: every
// call is charged, but a recursion's stack would grow before its work adds up.
func checkRecursion(trees map[string]*parse.Tree, names []string) error {
	calls := map[string][]string{}
	for _, n := range names {
		visit(trees[n].Root, func(node parse.Node) {
			if t, ok := node.(*parse.TemplateNode); ok {
				calls[n] = append(calls[n], t.Name)
			}
		})
	}
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var path []string
	var dfs func(n string) error
	dfs = func(n string) error {
		switch state[n] {
		case active:
			i := 0
			for path[i] != n {
				i++
			}
			return fmt.Errorf("template %q calls itself (%s): recursive templates are not allowed", n, strings.Join(append(path[i:], n), " -> "))
		case done:
			return nil
		}
		state[n] = active
		path = append(path, n)
		for _, c := range calls[n] {
			if err := dfs(c); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return nil
	}
	for _, n := range names {
		if err := dfs(n); err != nil {
			return err
		}
	}
	return nil
}

// insertChecks adds the budget's functions to tree: at the end of every range's and
// template call's pipeline, and of every printing action whose value may be a list,
// a dict or a struct.
func insertChecks(tree *parse.Tree, cost map[string]int64, funcs template.FuncMap) {
	visit(tree.Root, func(node parse.Node) {
		switch n := node.(type) {
		case *parse.RangeNode:
			body := iterationWork + nodeCost(n.List) + nodeCost(n.ElseList)
			n.Pipe.Cmds = append(n.Pipe.Cmds, checkCommand(tree, n.Pipe.Position(), rangeFunc, body))
		case *parse.TemplateNode:
			c := templateCallWork + cost[n.Name]
			if n.Pipe == nil {
				n.Pipe = &parse.PipeNode{NodeType: parse.NodePipe, Pos: n.Pos, Line: n.Line}
			}
			n.Pipe.Cmds = append(n.Pipe.Cmds, checkCommand(tree, n.Pos, callFunc, c))
		case *parse.ActionNode:
			if len(n.Pipe.Decl) == 0 && !printsScalar(n.Pipe, funcs) {
				n.Pipe.Cmds = append(n.Pipe.Cmds, checkCommand(tree, n.Pos, outFunc, -1))
			}
		}
	})
}

// checkCommand is the command "fn cost" (or "fn" when cost < 0).
func checkCommand(tree *parse.Tree, pos parse.Pos, fn string, cost int64) *parse.CommandNode {
	cmd := &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos}
	cmd.Args = append(cmd.Args, parse.NewIdentifier(fn).SetTree(tree).SetPos(pos))
	if cost >= 0 {
		cmd.Args = append(cmd.Args, &parse.NumberNode{NodeType: parse.NodeNumber, Pos: pos,
			IsInt: true, IsFloat: true, Int64: cost, Float64: float64(cost), Text: fmt.Sprint(cost)})
	}
	return cmd
}

// printsScalar reports whether the pipeline's value is known to be a string, a
// number or a bool: a literal, or a call of a function returning one.
func printsScalar(p *parse.PipeNode, funcs template.FuncMap) bool {
	if len(p.Cmds) == 0 {
		return false
	}
	last := p.Cmds[len(p.Cmds)-1]
	if len(last.Args) == 0 {
		return false
	}
	switch a := last.Args[0].(type) {
	case *parse.StringNode, *parse.NumberNode, *parse.BoolNode:
		return len(last.Args) == 1
	case *parse.IdentifierNode:
		if a.Ident == "len" || a.Ident == "not" {
			return funcs[a.Ident] == nil
		}
		f := funcs[a.Ident]
		if f == nil {
			return false
		}
		switch reflect.TypeOf(f).Out(0).Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			return true
		}
	}
	return false
}

// rangeSpec charges a range before it starts: its iterations times its body's cost
// (maps also pay for sorting their keys). Channels and functions, whose length is not
// known, are refused.
func rangeSpec(b *budget) any {
	return func(cost int64, v any) (any, error) {
		rv := reflect.ValueOf(v)
		for rv.Kind() == reflect.Pointer && !rv.IsNil() {
			rv = rv.Elem()
		}
		var n int64
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n = max(rv.Int(), 0)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			n = int64(min(rv.Uint(), math.MaxInt64))
		case reflect.Slice, reflect.Array:
			n = int64(rv.Len())
		case reflect.Map:
			// text/template sorts the keys: about n log2 n comparisons.
			n = int64(rv.Len())
			if err := b.charge("range", satMul(n, 4*int64(bits.Len64(uint64(n)))), satMul(n, 16)); err != nil {
				return nil, err
			}
		case reflect.Chan, reflect.Func:
			return nil, fmt.Errorf("range over a %s is not allowed", rv.Kind())
		case reflect.Invalid:
			return v, nil
		default:
			return nil, fmt.Errorf("range can't iterate over a value of type %s", rv.Type())
		}
		if n == 0 {
			return v, nil
		}
		if err := b.charge(fmt.Sprintf("range over %d elements", n), satMul(n, cost), 0); err != nil {
			return nil, err
		}
		return v, nil
	}
}

// callSpec charges one template call; the pipeline's value (if any) passes through.
func callSpec(b *budget) any {
	return func(cost int64, v ...any) (any, error) {
		if err := b.charge("template call", cost, 0); err != nil {
			return nil, err
		}
		if len(v) == 0 {
			return nil, nil
		}
		return v[0], nil
	}
}

// outSpec walks a value about to be printed: fmt formats lists and dicts in memory
// before writing, so their size is charged first, and their depth is bounded.
func outSpec(b *budget) any {
	return func(v any) (any, error) {
		switch v.(type) {
		case nil, string, bool, int, int64, float64:
			return v, nil
		}
		s, err := b.walk("print", v)
		if err != nil {
			return nil, err
		}
		if err := b.charge("print", 1, s.bytes); err != nil {
			return nil, err
		}
		return v, nil
	}
}
