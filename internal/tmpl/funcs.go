package tmpl

import (
	"errors"
	"fmt"
	"reflect"
	"regexp/syntax"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// Limits of single function results.
const (
	// MaxSequenceLength is the most elements until, untilStep and seq may return.
	MaxSequenceLength = 1 << 16
	// MaxFuncStringBytes is the most bytes repeat, indent and nindent may return.
	MaxFuncStringBytes = 1 << 20
	// MaxRegexpSize is the most instructions a compiled regular expression may have.
	MaxRegexpSize = 10_000
	// MaxFromJSONBytes is the longest string fromJson decodes: Kubernetes' limit on
	// all annotations of an object (256 KiB), since templates decode annotations.
	MaxFromJSONBytes = 256 << 10
)

// ErrOutputTooLarge is wrapped by every error caused by an execution's output or a
// single function's result exceeding a size limit. Test for it with errors.Is.
var ErrOutputTooLarge = errors.New("output too large")

// sprigFuncs is sprig's hermetic map: the implementations wrapped below.
var sprigFuncs = sprig.HermeticTxtFuncMap()

// funcSpec makes one template function that charges b.
type funcSpec func(b *budget) any

// funcSpecs are the functions templates can call (besides text/template's and, or,
// not, len, slice and call), each charging the budget before it works or allocates.
var funcSpecs = buildFuncSpecs()

// funcMap is the functions bound to a budget that allows any single call within the
// default limits: what parsing needs, and what templateFuncs returns.
var funcMap = bindFuncs(&budget{perCall: true, maxWork: DefaultMaxWork, maxBytes: DefaultMaxValueBytes})

// templateFuncs returns a copy of the functions templates can call (without the
// hidden ones the loader inserts): sprig's text functions without those that read the
// clock, the time zone, the environment or the network, are random, or whose output is
// not bounded (removedFuncs), with size-capped until, untilStep, seq, repeat, indent and
// nindent, fromJson and toJson that report errors instead of hiding them, sortAlpha
// that does not sort its argument in place, keys and values in key order, set and
// merge that refuse to make a dict contain itself, and print, printf, println, html,
// js, urlquery, eq, ne, lt, le, gt, ge and index that count their cost. The functions
// returned are bound to a budget that only checks that each single call stays within
// the default limits.
func templateFuncs() template.FuncMap {
	m := make(template.FuncMap, len(funcMap))
	for k, v := range funcMap {
		if !strings.HasPrefix(k, "_") {
			m[k] = v
		}
	}
	return m
}

func bindFuncs(b *budget) template.FuncMap {
	m := make(template.FuncMap, len(funcSpecs))
	for name, spec := range funcSpecs {
		m[name] = spec(b)
	}
	return m
}

var errorType = reflect.TypeFor[error]()

// costFunc charges the budget for one call with the given arguments (variadic
// arguments flattened).
type costFunc func(b *budget, fn string, args []reflect.Value) error

// callWork is the work of calling a wrapped function (through reflection, twice)
// besides what it reads.
const callWork = 4

// scalar: the result is small; the function reads its arguments once.
func scalar(b *budget, fn string, args []reflect.Value) error {
	return b.charge(fn, callWork+shallowBytes(args)/64, 16)
}

// grow returns a cost for a function whose result has at most k times the bytes of
// its arguments.
func grow(k int64) costFunc {
	return func(b *budget, fn string, args []reflect.Value) error {
		n := shallowBytes(args)
		return b.charge(fn, callWork+n/64, satAdd(satMul(k, n), 64))
	}
}

// deep returns a cost for a function that walks (formats, copies, compares) its
// arguments: k times the bytes of their formatted values.
func deep(k int64) costFunc {
	return func(b *budget, fn string, args []reflect.Value) error {
		var total valueSize
		for _, a := range args {
			var s valueSize
			var err error
			if a.IsValid() && a.CanInterface() {
				s, err = b.walk(fn, a.Interface())
			}
			if err != nil {
				return err
			}
			total.bytes = satAdd(total.bytes, s.bytes)
			total.nodes = satAdd(total.nodes, s.nodes)
		}
		return b.charge(fn, callWork+total.bytes/64, satAdd(satMul(k, total.bytes), satMul(16, total.nodes)+64))
	}
}

// wrap makes a spec from f (a sprig function or one of ours) that charges cost before
// calling f. The function returned has f's arguments and returns f's first result and
// an error.
func wrap(name string, f any, cost costFunc) funcSpec {
	fv := reflect.ValueOf(f)
	ft := fv.Type()
	ins := make([]reflect.Type, ft.NumIn())
	for i := range ins {
		ins[i] = ft.In(i)
	}
	out := ft.Out(0)
	nt := reflect.FuncOf(ins, []reflect.Type{out, errorType}, ft.IsVariadic())
	variadic := ft.IsVariadic()
	hasErr := ft.NumOut() == 2
	return func(b *budget) any {
		return reflect.MakeFunc(nt, func(args []reflect.Value) []reflect.Value {
			flat := args
			if variadic {
				last := args[len(args)-1]
				flat = make([]reflect.Value, 0, len(args)-1+last.Len())
				flat = append(flat, args[:len(args)-1]...)
				for i := 0; i < last.Len(); i++ {
					flat = append(flat, last.Index(i))
				}
			}
			if err := cost(b, name, flat); err != nil {
				return []reflect.Value{reflect.Zero(out), reflect.ValueOf(&err).Elem()}
			}
			var res []reflect.Value
			if variadic {
				res = fv.CallSlice(args)
			} else {
				res = fv.Call(args)
			}
			if !hasErr {
				res = append(res, reflect.Zero(errorType))
			}
			return res
		}).Interface()
	}
}

func sprigFunc(name string, cost costFunc) funcSpec {
	return wrap(name, sprigFuncs[name], cost)
}

func buildFuncSpecs() map[string]funcSpec {
	m := map[string]funcSpec{}
	for _, n := range []string{
		// Numbers, bools, types, comparisons: small results.
		"add1", "add", "sub", "div", "mod", "mul", "add1f", "addf", "subf", "divf", "mulf",
		"biggest", "max", "min", "maxf", "minf", "ceil", "floor", "round",
		"atoi", "int64", "int", "float64", "toDecimal", "contains", "hasPrefix", "hasSuffix",
		"empty", "all", "any", "default", "coalesce", "ternary", "typeOf", "typeIs", "typeIsLike",
		"kindOf", "kindIs", "isAbs", "hasKey", "get", "unset", "first", "last",
		"mustFirst", "mustLast", "dig", "plural", "duration", "hello", "fail", "slice", "mustSlice",
		"sha1sum", "sha256sum", "sha512sum", "adler32sum", "semverCompare", "regexQuoteMeta",
	} {
		m[n] = sprigFunc(n, scalar)
	}
	m["regexQuoteMeta"] = sprigFunc("regexQuoteMeta", grow(2))
	m["semver"] = sprigFunc("semver", grow(4))
	m["urlParse"] = sprigFunc("urlParse", grow(8))
	m["urlJoin"] = sprigFunc("urlJoin", deep(2))
	// Strings from strings, at most k times their arguments.
	for n, k := range map[string]int64{
		"abbrev": 1, "abbrevboth": 1, "trunc": 1, "trim": 1, "upper": 2, "lower": 2, "title": 2,
		"untitle": 2, "substr": 1, "trimall": 1, "trimAll": 1, "trimSuffix": 1, "trimPrefix": 1,
		"nospace": 1, "initials": 1, "swapcase": 2, "snakecase": 2, "camelcase": 1, "kebabcase": 2,
		"wrap": 2, "squote": 1, "b64enc": 2, "b64dec": 1, "b32enc": 2, "b32dec": 1,
		"base": 1, "dir": 1, "clean": 1, "ext": 1,
	} {
		m[n] = sprigFunc(n, grow(k))
	}
	// Functions that format or walk their arguments.
	for n, k := range map[string]int64{
		"cat": 1, "toString": 1, "toStrings": 2, "join": 2, "deepEqual": 0, "has": 0, "mustHas": 0,
		"deepCopy": 2, "mustDeepCopy": 2, "toPrettyJson": 8, "mustToPrettyJson": 8, "toRawJson": 2,
		"mustToRawJson": 2, "mustToJson": 6, "pluck": 1, "pick": 1, "omit": 1,
		"compact": 1, "mustCompact": 1, "rest": 1, "mustRest": 1, "initial": 1, "mustInitial": 1,
		"reverse": 1, "mustReverse": 1, "concat": 1, "list": 1, "tuple": 1, "dict": 2,
		"append": 1, "push": 1, "mustAppend": 1, "mustPush": 1, "prepend": 1, "mustPrepend": 1,
	} {
		m[n] = sprigFunc(n, deep(k))
	}
	// Quadratic: every element compared with every other.
	for _, n := range []string{"uniq", "mustUniq", "without", "mustWithout"} {
		m[n] = sprigFunc(n, quadratic)
	}
	m["quote"] = quoteSpec
	m["toJson"] = toJSONSpec
	m["fromJson"] = func(b *budget) any { return func(s string) (any, error) { return fromJSON(b, "fromJson", s) } }
	m["mustFromJson"] = func(b *budget) any { return func(s string) (any, error) { return fromJSON(b, "mustFromJson", s) } }
	m["until"] = func(b *budget) any { return func(n int) ([]int, error) { return cappedUntil(b, n) } }
	m["untilStep"] = func(b *budget) any {
		return func(start, stop, step int) ([]int, error) { return cappedUntilStep(b, "untilStep", start, stop, step) }
	}
	m["seq"] = func(b *budget) any { return func(p ...int) (string, error) { return cappedSeq(b, p...) } }
	m["repeat"] = func(b *budget) any { return func(n int, s string) (string, error) { return cappedRepeat(b, n, s) } }
	m["indent"] = func(b *budget) any {
		return func(n int, s string) (string, error) { return cappedIndent(b, "indent", n, s) }
	}
	m["nindent"] = func(b *budget) any {
		return func(n int, s string) (string, error) {
			r, err := cappedIndent(b, "nindent", n, s)
			return "\n" + r, err
		}
	}
	m["replace"] = wrap("replace", sprigFuncs["replace"], func(b *budget, fn string, a []reflect.Value) error {
		// replace old new src: at most len(src)+1 replacements.
		src, repl := int64(a[2].Len()), int64(a[1].Len())
		return b.charge(fn, 1+src/64, satAdd(src, satMul(src+1, repl)))
	})
	m["sortAlpha"] = wrap("sortAlpha", sortAlpha, deep(2))
	m["keys"] = wrap("keys", dictKeys, deep(1))
	m["values"] = wrap("values", dictValues, deep(1))
	m["split"] = wrap("split", sprigFuncs["split"], splitCost)
	m["splitList"] = wrap("splitList", sprigFuncs["splitList"], splitCost)
	m["splitn"] = wrap("splitn", sprigFuncs["splitn"], splitCost)
	m["chunk"] = wrap("chunk", chunk, deep(2))
	m["mustChunk"] = wrap("mustChunk", chunk, deep(2))
	m["set"] = setSpec
	for _, n := range []string{"merge", "mergeOverwrite", "mustMerge", "mustMergeOverwrite"} {
		m[n] = mergeSpec(n)
	}
	for _, n := range []string{"regexMatch", "mustRegexMatch", "regexFind", "mustRegexFind",
		"regexFindAll", "mustRegexFindAll", "regexSplit", "mustRegexSplit",
		"regexReplaceAll", "mustRegexReplaceAll", "regexReplaceAllLiteral", "mustRegexReplaceAllLiteral"} {
		m[n] = sprigFunc(n, regexCost)
	}
	// text/template's builtins that format or compare values, with costs.
	m["print"] = printSpec("print", fmt.Sprint)
	m["println"] = printSpec("println", fmt.Sprintln)
	m["printf"] = printfSpec
	m["html"] = wrap("html", template.HTMLEscaper, deep(6))
	m["js"] = wrap("js", template.JSEscaper, deep(6))
	m["urlquery"] = wrap("urlquery", template.URLQueryEscaper, deep(3))
	m["eq"] = compareSpec("eq", eq)
	m["ne"] = compare2Spec("ne", ne)
	m["lt"] = compare2Spec("lt", lt)
	m["le"] = compare2Spec("le", le)
	m["gt"] = compare2Spec("gt", gt)
	m["ge"] = compare2Spec("ge", ge)
	m["index"] = indexSpec
	// Hidden functions the loader inserts into templates.
	m[rangeFunc] = rangeSpec
	m[callFunc] = callSpec
	m[outFunc] = outSpec
	return m
}

func quadratic(b *budget, fn string, args []reflect.Value) error {
	var nodes int64
	for _, a := range args {
		if a.IsValid() && a.CanInterface() {
			s, err := b.walk(fn, a.Interface())
			if err != nil {
				return err
			}
			nodes = satAdd(nodes, s.nodes)
		}
	}
	return b.charge(fn, satMul(nodes, nodes), satMul(16, nodes))
}

// splitCost: at most one element per byte of the string (plus one), each a string
// header and, for split's dict, a key and an entry.
func splitCost(b *budget, fn string, a []reflect.Value) error {
	var n int64
	for _, v := range a {
		if v.Kind() == reflect.String {
			n = satAdd(n, int64(v.Len()))
		}
	}
	return b.charge(fn, 1+n/16, satAdd(satMul(n+1, 96), 64))
}

// regexCost compiles the expression once to check its size (the matching work is
// linear in the input times the program size) and bounds the result.
func regexCost(b *budget, fn string, a []reflect.Value) error {
	expr := a[0].String()
	if err := b.charge(fn, 1+int64(len(expr))/8, satMul(int64(len(expr)), 64)); err != nil {
		return err
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	size := int64(len(prog.Inst))
	if size > MaxRegexpSize {
		return fmt.Errorf("%s: the regular expression compiles to %d instructions, more than %d: %w", fn, size, MaxRegexpSize, ErrBudgetExceeded)
	}
	s := int64(a[1].Len())
	out := satMul(s+1, 16)
	if strings.Contains(fn, "eplace") {
		// Every match (at most len(s)+1, not overlapping) is replaced by repl with
		// its references expanded to at most the whole input.
		repl := int64(a[2].Len())
		out = satAdd(s, satMul(satAdd(satMul(2, s), 1), repl))
	}
	return b.charge(fn, satMul(1+s/16, 1+size/4), out)
}
