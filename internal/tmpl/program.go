package tmpl

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/Masterminds/sprig/v3"
)

// Limits bound every execution of a Program.
type Limits struct {
	// Work is the most work units one execution may use (DefaultMaxWork when not
	// positive).
	Work int64
	// ValueBytes is the most bytes of values the functions of one execution may
	// build (DefaultMaxValueBytes when not positive).
	ValueBytes int64
	// WorkName and ValueBytesName name, in errors, the settings the caller's users
	// change to raise Work and ValueBytes (for example "MaxTemplateWork"); empty
	// names are left out.
	WorkName, ValueBytesName string
}

// Spec is a template to parse.
type Spec struct {
	// Name names the template in errors.
	Name string
	// Text is the template source.
	Text string
	// MissingKey is text/template's missingkey option: "error", "zero",
	// "default" (also when empty) or "invalid" (the same as "default").
	MissingKey string
	// Limits bound each execution.
	Limits Limits
	// Values names functions of no arguments that return a string given for each
	// execution (Program.Execute's values, in this order), such as the IP of the pod
	// whose annotation a template reads. Names must be identifiers that are not
	// functions of the engine.
	Values []string
}

// Program is a parsed template prepared for execution under a budget. It is safe for
// concurrent use: each execution takes a clone whose functions charge the clone's own
// budget from a free list (not a sync.Pool: the garbage collector empties those, and
// binding a clone's functions costs about as much as a small render).
type Program struct {
	base     *template.Template
	rootCost int64
	limits   Limits
	values   []string

	mu   sync.Mutex
	free []*executor
	// raw: executions run base itself, without clones or a budget (ParseUnbudgeted).
	raw bool
}

// maxFreeExecutors bounds the clones a program keeps between executions.
const maxFreeExecutors = 8

// executor is one clone of a program with its functions bound to its budget and its
// late-bound values.
type executor struct {
	t      *template.Template
	b      budget
	values []string
}

// identifier matches the names text/template accepts for functions.
var identifier = regexp.MustCompile(`^[\p{L}_][\p{L}\p{Nd}_]*$`)

// Parse parses s.Text with the engine's functions and s.Values, rejects removed
// functions and recursive templates, and inserts the budget's checks. Errors about s
// itself name the Spec field.
func Parse(s Spec) (*Program, error) {
	all := make(template.FuncMap, len(funcMap)+len(removedFuncs)+len(s.Values))
	for n := range removedFuncs {
		all[n] = func() string { return "" } // reported below, never run
	}
	for n, f := range funcMap {
		all[n] = f
	}
	for i, n := range s.Values {
		if _, taken := all[n]; taken || !identifier.MatchString(n) || strings.HasPrefix(n, "_") {
			return nil, fmt.Errorf("template %s: Spec.Values[%d]: %q is not an identifier free for a value", s.Name, i, n)
		}
		all[n] = func() string { return "" } // bound per execution
	}
	missing, err := missingKey(s)
	if err != nil {
		return nil, err
	}
	t, err := template.New(s.Name).Option(missing).Funcs(all).Parse(s.Text)
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
		insertChecks(trees[n], cost, all)
	}
	l := s.Limits
	if l.Work <= 0 {
		l.Work = DefaultMaxWork
	}
	if l.ValueBytes <= 0 {
		l.ValueBytes = DefaultMaxValueBytes
	}
	return &Program{base: t, rootCost: cost[s.Name], limits: l, values: append([]string(nil), s.Values...)}, nil
}

// missingKey is s's text/template option (which panics on a value it does not know).
func missingKey(s Spec) (string, error) {
	switch s.MissingKey {
	case "":
		return "missingkey=default", nil
	case "default", "invalid", "zero", "error":
		return "missingkey=" + s.MissingKey, nil
	}
	return "", fmt.Errorf("template %s: Spec.MissingKey: %q is not error, zero, default or invalid", s.Name, s.MissingKey)
}

// ParseUnbudgeted parses s as text/template does with sprig's hermetic functions
// (fromJson and toJson reporting errors) and s.MissingKey, and nothing else: no
// budget, no inserted checks, removed functions and recursion not refused, and
// s.Limits and s.Values ignored (so are Execute's values). It exists to measure what
// the budget costs; never run a template a user wrote through it.
func ParseUnbudgeted(s Spec) (*Program, error) {
	funcs := sprig.HermeticTxtFuncMap()
	funcs["fromJson"] = func(s string) (any, error) {
		return fromJSON(&budget{perCall: true, maxWork: math.MaxInt64, maxBytes: math.MaxInt64}, "fromJson", s)
	}
	funcs["toJson"] = func(v any) (string, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("toJson: %w", err)
		}
		return string(b), nil
	}
	missing, err := missingKey(s)
	if err != nil {
		return nil, err
	}
	t, err := template.New(s.Name).Option(missing).Funcs(funcs).Parse(s.Text)
	if err != nil {
		return nil, err
	}
	return &Program{base: t, raw: true}, nil
}

// Execute runs the program on data, appending its output to buf[:0] (buf may be
// nil), with the output capped at limit bytes and the work and value bytes at the
// program's limits. values are the late-bound values, one for each of Spec.Values in
// its order. Errors wrap ErrBudgetExceeded or ErrOutputTooLarge when a limit is the
// cause; the functions the engine inserted are not named in them.
func (p *Program) Execute(data any, limit int, buf []byte, values ...string) ([]byte, error) {
	if p == nil {
		return nil, fmt.Errorf("template program is nil")
	}
	w := cappedBuffer{buf: buf[:0], limit: limit}
	if p.raw {
		if err := p.base.Execute(&w, data); err != nil {
			return nil, err
		}
		return w.buf, nil
	}
	if len(values) != len(p.values) {
		return nil, fmt.Errorf("template %s: %d values given for %d declared (%s)", p.base.Name(), len(values), len(p.values), strings.Join(p.values, ", "))
	}
	e, err := p.get()
	if err != nil {
		return nil, err
	}
	e.b.reset(p.limits)
	copy(e.values, values)
	defer p.put(e)
	if err := e.b.charge("template", p.rootCost, 0); err != nil {
		return nil, err
	}
	if err := e.t.Execute(&w, data); err != nil {
		return nil, tidyError(err)
	}
	return w.buf, nil
}

func (p *Program) get() (*executor, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		e := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return e, nil
	}
	p.mu.Unlock()
	return p.makeExecutor()
}

func (p *Program) put(e *executor) {
	clear(e.values)
	p.mu.Lock()
	if len(p.free) < maxFreeExecutors {
		p.free = append(p.free, e)
	}
	p.mu.Unlock()
}

func (p *Program) makeExecutor() (*executor, error) {
	c, err := p.base.Clone()
	if err != nil {
		return nil, err
	}
	e := &executor{values: make([]string, len(p.values))}
	fm := bindFuncs(&e.b)
	for i, n := range p.values {
		fm[n] = func() string { return e.values[i] }
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

// hiddenArg matches a hidden function call the loader appended to a pipeline, as
// text/template prints a node in an error's location: `{{template "x" . | _kplanCall
// 64}}` or, for a call without an argument, `{{template "x" _kplanCall 64}}`.
var hiddenArg = regexp.MustCompile(`( \|)? _kplan[A-Za-z]+( -?[0-9]+)?`)

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

// tidyError returns err with the hidden functions' names replaced (see hiddenCall) or
// removed (hiddenArg).
func tidyError(err error) error {
	msg := err.Error()
	if !strings.Contains(msg, "_kplan") {
		return err
	}
	msg = hiddenCall.ReplaceAllStringFunc(msg, func(m string) string {
		return "<" + hiddenLabel[hiddenCall.FindStringSubmatch(m)[1]] + ">: "
	})
	msg = hiddenArg.ReplaceAllString(msg, "")
	return &execError{msg: msg, err: err}
}
