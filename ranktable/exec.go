package ranktable

import (
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"sort"
	"strings"
	"sync"
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

// program is a parsed template prepared for execution under a budget. It is safe for
// concurrent use: each execution takes a clone whose functions charge the clone's own
// budget from a free list (not a sync.Pool: the garbage collector empties those, and
// binding a clone's functions costs about as much as a small render).
type program struct {
	base              *template.Template
	rootCost          int64
	maxWork, maxBytes int64
	podFuncs          bool

	mu   sync.Mutex
	free []*executor
	// newExecutor, when set, replaces makeExecutor (benchmarks without the budget).
	newExecutor func() (*executor, error)
}

// maxFreeExecutors bounds the clones a program keeps between executions.
const maxFreeExecutors = 8

// executor is one clone of a program with its functions bound to its budget (and, for
// parser templates, to its pod).
type executor struct {
	t   *template.Template
	b   budget
	pod podInfo
}

// budgetLimits returns the limits of opts with defaults applied.
func (o LoadOptions) budgetLimits() (work, bytes int64) {
	work, bytes = o.MaxTemplateWork, o.MaxTemplateValueBytes
	if work <= 0 {
		work = DefaultMaxTemplateWork
	}
	if bytes <= 0 {
		bytes = DefaultMaxTemplateValueBytes
	}
	return work, bytes
}

// parseProgram parses text with funcs (the functions parsing accepts), rejects removed
// functions and recursive templates, and inserts the budget's checks.
func parseProgram(name, text, missingKey string, funcs template.FuncMap, opts LoadOptions, podFuncs bool) (*program, error) {
	all := make(template.FuncMap, len(funcs)+len(removedFuncs))
	for n := range removedFuncs {
		all[n] = func() string { return "" } // reported below, never run
	}
	for n, f := range funcs {
		all[n] = f
	}
	t, err := template.New(name).Option("missingkey=" + missingKey).Funcs(all).Parse(text)
	if err != nil {
		return nil, err
	}
	trees := map[string]*parse.Tree{}
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Tree.Root != nil {
			trees[tt.Name()] = tt.Tree
		}
	}
	names := make([]string, 0, len(trees))
	for n := range trees {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var bad error
		visit(trees[n].Root, func(node parse.Node) {
			if id, ok := node.(*parse.IdentifierNode); ok && bad == nil {
				if why, removed := removedFuncs[id.Ident]; removed {
					loc, _ := trees[n].ErrorContext(id)
					bad = fmt.Errorf("template: %s: function %q is not available: %s", loc, id.Ident, why)
				}
			}
		})
		if bad != nil {
			return nil, bad
		}
	}
	if err := checkRecursion(trees, names); err != nil {
		return nil, err
	}
	cost := map[string]int64{}
	for _, n := range names {
		cost[n] = nodeCost(trees[n].Root)
	}
	for _, n := range names {
		insertChecks(trees[n], cost, funcs)
	}
	work, bytes := opts.budgetLimits()
	return &program{base: t, rootCost: cost[name], maxWork: work, maxBytes: bytes, podFuncs: podFuncs}, nil
}

// execute runs the program on data into buf (reused), with the output capped at limit
// bytes and the work and value bytes at the program's budget.
func (p *program) execute(data any, limit int, buf []byte, pod podInfo) ([]byte, error) {
	e, err := p.get()
	if err != nil {
		return nil, err
	}
	e.b.reset(p.maxWork, p.maxBytes)
	e.pod = pod
	defer p.put(e)
	if err := e.b.charge("template", p.rootCost, 0); err != nil {
		return nil, err
	}
	w := cappedBuffer{buf: buf[:0], limit: limit}
	if err := e.t.Execute(&w, data); err != nil {
		return nil, err
	}
	return w.buf, nil
}

func (p *program) get() (*executor, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		e := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return e, nil
	}
	p.mu.Unlock()
	if p.newExecutor != nil {
		return p.newExecutor()
	}
	return p.makeExecutor()
}

func (p *program) put(e *executor) {
	e.pod = podInfo{}
	p.mu.Lock()
	if len(p.free) < maxFreeExecutors {
		p.free = append(p.free, e)
	}
	p.mu.Unlock()
}

func (p *program) makeExecutor() (*executor, error) {
	c, err := p.base.Clone()
	if err != nil {
		return nil, err
	}
	e := &executor{}
	fm := bindFuncs(&e.b)
	if p.podFuncs {
		pod := &e.pod
		fm["podIP"] = func() string { return pod.ip }
		fm["nodeName"] = func() string { return pod.node }
		fm["podName"] = func() string { return pod.name }
		fm["podNamespace"] = func() string { return pod.namespace }
	}
	e.t = c.Funcs(fm)
	return e, nil
}

// cappedBuffer is an io.Writer that fails once more than limit bytes are written, so
// text/template stops executing a template whose output explodes.
type cappedBuffer struct {
	buf   []byte
	limit int
}

func (w *cappedBuffer) Write(p []byte) (int, error) {
	if len(p) > w.limit-len(w.buf) {
		return 0, fmt.Errorf("more than %d bytes: %w", w.limit, ErrOutputTooLarge)
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

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
