package ranktable

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
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
		return nil, tidyError(err)
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

// hiddenCall matches text/template's account of a failed call of a function the loader
// inserted, such as `<_kplanRange 2>: error calling _kplanRange: `; those names mean
// nothing to a template's author.
var hiddenCall = regexp.MustCompile(`<(_kplan[A-Za-z]+)[^>]*>: error calling _kplan[A-Za-z]+: `)

// hiddenLabel says what a hidden function stands for in errors.
var hiddenLabel = map[string]string{rangeFunc: "range", callFunc: "template", outFunc: "print"}

// execError is an execution error with the hidden functions' names replaced by what
// they stand for; it wraps the original.
type execError struct {
	msg string
	err error
}

func (e *execError) Error() string { return e.msg }
func (e *execError) Unwrap() error { return e.err }

// tidyError returns err with the hidden functions' names replaced (see hiddenCall).
func tidyError(err error) error {
	msg := err.Error()
	if !strings.Contains(msg, "_kplan") {
		return err
	}
	msg = hiddenCall.ReplaceAllStringFunc(msg, func(m string) string {
		return "<" + hiddenLabel[hiddenCall.FindStringSubmatch(m)[1]] + ">: "
	})
	return &execError{msg: msg, err: err}
}
