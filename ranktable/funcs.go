package ranktable

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
)

// DefaultMaxOutputBytes is the default cap on a rendered table (Input.MaxOutputBytes,
// RenderOptions.MaxOutputBytes): the most data a ConfigMap can hold.
const DefaultMaxOutputBytes = 1 << 20

// Limits of single template function results.
const (
	// maxSequenceLength is the most elements until, untilStep and seq may return.
	maxSequenceLength = 1 << 16
	// maxFuncStringBytes is the most bytes repeat, indent and nindent may return.
	maxFuncStringBytes = 1 << 20
	// maxRegexpSize is the most instructions a compiled regular expression may have.
	maxRegexpSize = 10_000
)

// ErrOutputTooLarge is wrapped by every error caused by a template or a rendered table
// exceeding a size limit. Test for it with errors.Is.
var ErrOutputTooLarge = errors.New("output too large")

// removedFuncs are the sprig functions templates cannot call, with the reason. A
// template naming one fails to load with the reason. Every function of sprig's full
// map is either here or in funcSpecs (a test checks it).
var removedFuncs = map[string]string{
	"ago":                      "it reads the clock",
	"date":                     "it reads the time zone (and dates come only from the clock)",
	"dateInZone":               "it reads the time zone database (and dates come only from the clock)",
	"date_in_zone":             "it reads the time zone database (and dates come only from the clock)",
	"dateModify":               "dates come only from the clock",
	"date_modify":              "dates come only from the clock",
	"mustDateModify":           "dates come only from the clock",
	"must_date_modify":         "dates come only from the clock",
	"durationRound":            "it reads the clock for dates",
	"htmlDate":                 "it reads the time zone",
	"htmlDateInZone":           "it reads the time zone database",
	"now":                      "it reads the clock",
	"toDate":                   "it reads the time zone",
	"mustToDate":               "it reads the time zone",
	"unixEpoch":                "dates come only from the clock",
	"randAlphaNum":             "it is random",
	"randAlpha":                "it is random",
	"randAscii":                "it is random",
	"randNumeric":              "it is random",
	"randBytes":                "it is random",
	"randInt":                  "it is random",
	"shuffle":                  "it is random",
	"uuidv4":                   "it is random",
	"bcrypt":                   "it is random (salt) and slow by design",
	"htpasswd":                 "it is random (salt) and slow by design",
	"genPrivateKey":            "it is random",
	"genCA":                    "it is random and reads the clock",
	"genCAWithKey":             "it reads the clock",
	"genSelfSignedCert":        "it is random and reads the clock",
	"genSelfSignedCertWithKey": "it reads the clock",
	"genSignedCert":            "it is random and reads the clock",
	"genSignedCertWithKey":     "it reads the clock",
	"buildCustomCert":          "it builds secrets, of no use in a rank table",
	"encryptAES":               "it is random",
	"decryptAES":               "it handles secrets, of no use in a rank table",
	"derivePassword":           "it takes about 0.1 s and 32 MiB per call by design",
	"env":                      "it reads the environment (and would copy controller secrets into ConfigMaps)",
	"expandenv":                "it reads the environment (and would copy controller secrets into ConfigMaps)",
	"getHostByName":            "it queries the network",
	"osBase":                   "its result depends on the operating system",
	"osClean":                  "its result depends on the operating system",
	"osDir":                    "its result depends on the operating system",
	"osExt":                    "its result depends on the operating system",
	"osIsAbs":                  "its result depends on the operating system",
	"wrapWith":                 "its output is not bounded by its input",
}

// sprigFuncs is sprig's hermetic map: the implementations wrapped below.
var sprigFuncs = sprig.HermeticTxtFuncMap()

// funcSpec makes one template function that charges b.
type funcSpec func(b *budget) any

// funcSpecs are the functions templates can call (besides text/template's and, or,
// not, len, slice and call), each charging the budget before it works or allocates.
var funcSpecs = buildFuncSpecs()

// funcMap is the functions bound to a budget that allows any single call within the
// default limits: what parsing needs, and what templateFuncs returns.
var funcMap = bindFuncs(&budget{perCall: true, maxWork: DefaultMaxTemplateWork, maxBytes: DefaultMaxTemplateValueBytes})

// templateFuncs returns a copy of the functions ranktable and parser templates can call:
// sprig's text functions without those that read the clock, the time zone, the
// environment or the network, are random, or whose output is not bounded (see the
// package doc), with size-capped until, untilStep, seq, repeat, indent and nindent,
// fromJson and toJson that report errors instead of hiding them, sortAlpha that does
// not sort its argument in place, keys and values in key order, set and merge that
// refuse to make a dict contain itself, and print, printf, println, html, js, urlquery, eq, ne, lt, le, gt, ge and
// index that count their cost. In this package's executions every call is charged to
// the execution's budget; the functions returned here only check that each single call
// stays within the default limits. Parser templates can call podIP, nodeName, podName
// and podNamespace as well.
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
	if size > maxRegexpSize {
		return fmt.Errorf("%s: the regular expression compiles to %d instructions, more than %d: %w", fn, size, maxRegexpSize, ErrBudgetExceeded)
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

var quoteImpl = sprigFuncs["quote"].(func(...any) string)

// quoteSpec is sprig's quote: %q of each argument's string value.
func quoteSpec(b *budget) any {
	return func(args ...any) (string, error) {
		if len(args) == 1 {
			if s, ok := args[0].(string); ok {
				n := int64(len(s))
				if err := b.charge("quote", 1+n/64, 4*n+16); err != nil {
					return "", err
				}
				return strconv.Quote(s), nil
			}
		}
		if err := deep(4)(b, "quote", reflectArgs(args)); err != nil {
			return "", err
		}
		return quoteImpl(args...), nil
	}
}

func reflectArgs(args []any) []reflect.Value {
	out := make([]reflect.Value, len(args))
	for i, a := range args {
		out[i] = reflect.ValueOf(a)
	}
	return out
}

// toJSONSpec is toJson reporting errors (sprig's swallows them).
func toJSONSpec(b *budget) any {
	return func(v any) (string, error) {
		if s, ok := v.(string); ok {
			n := int64(len(s))
			if err := b.charge("toJson", 1+n/64, 6*n+16); err != nil {
				return "", err
			}
		} else if err := deep(6)(b, "toJson", []reflect.Value{reflect.ValueOf(v)}); err != nil {
			return "", err
		}
		return toJSON(v)
	}
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toJson: %w", err)
	}
	return string(b), nil
}

func fromJSON(b *budget, fn, s string) (any, error) {
	if len(s) > apivalidation.TotalAnnotationSizeLimitB {
		return nil, tooLong(fn, int64(len(s)), apivalidation.TotalAnnotationSizeLimitB)
	}
	// Decoded values take at most about 24 bytes per input byte ("[0,0,...]").
	if err := b.charge(fn, 1+int64(len(s))/16, 24*int64(len(s))+64); err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	if _, err := b.walk(fn, v); err != nil {
		return nil, err
	}
	return v, nil
}

func tooLong(fn string, n int64, limit int) error {
	return fmt.Errorf("%s: %d exceeds the limit of %d: %w", fn, n, limit, ErrOutputTooLarge)
}

// stepCount is how many of start, start+step, start+2*step, ... come before stop
// (or reach it, when inclusive), computed without overflow.
func stepCount(start, stop, step int64, inclusive bool) uint64 {
	if step == 0 || (step > 0 && start > stop) || (step < 0 && start < stop) || (!inclusive && start == stop) {
		return 0
	}
	var span, abs uint64
	if step > 0 {
		span, abs = uint64(stop)-uint64(start), uint64(step)
	} else {
		span, abs = uint64(start)-uint64(stop), uint64(-(step+1))+1
	}
	if inclusive {
		return min(span/abs, math.MaxUint64-1) + 1
	}
	return (span-1)/abs + 1
}

func cappedUntilStep(b *budget, fn string, start, stop, step int) ([]int, error) {
	n := stepCount(int64(start), int64(stop), int64(step), false)
	if n == 0 {
		return nil, nil
	}
	if n > maxSequenceLength {
		return nil, tooLong(fn, int64(min(n, math.MaxInt64)), maxSequenceLength)
	}
	if err := b.charge(fn, int64(n), 8*int64(n)+24); err != nil {
		return nil, err
	}
	out := make([]int, n)
	v := start
	for i := range out {
		out[i] = v
		v += step // may wrap after the last element, which is not used
	}
	return out, nil
}

func cappedUntil(b *budget, count int) ([]int, error) {
	if count < 0 {
		return cappedUntilStep(b, "until", 0, count, -1)
	}
	return cappedUntilStep(b, "until", 0, count, 1)
}

// cappedSeq mirrors sprig's seq (the Unix seq command) for integer arguments.
func cappedSeq(b *budget, params ...int) (string, error) {
	start, stop, step := 1, 0, 1
	switch len(params) {
	case 0:
		return "", nil
	case 1:
		stop = params[0]
		if stop < start {
			step = -1
		}
	case 2:
		start, stop = params[0], params[1]
		if start > stop {
			step = -1
		}
	case 3:
		start, step, stop = params[0], params[1], params[2]
		if step < 0 && stop >= start {
			return "", nil // as sprig: counting down needs a smaller stop
		}
	default:
		return "", fmt.Errorf("seq: at most 3 arguments, got %d", len(params))
	}
	n := stepCount(int64(start), int64(stop), int64(step), true)
	if n == 0 {
		return "", nil
	}
	if n > maxSequenceLength {
		return "", tooLong("seq", int64(min(n, math.MaxInt64)), maxSequenceLength)
	}
	if err := b.charge("seq", int64(n), 21*int64(n)); err != nil {
		return "", err
	}
	var sb strings.Builder
	v := start
	for i := uint64(0); i < n; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(strconv.Itoa(v))
		v += step
	}
	return sb.String(), nil
}

func cappedRepeat(b *budget, count int, s string) (string, error) {
	if count <= 0 {
		return "", nil
	}
	n := satMul(int64(count), int64(len(s)))
	if n > maxFuncStringBytes {
		return "", tooLong("repeat", n, maxFuncStringBytes)
	}
	if err := b.charge("repeat", 1+n/64, n); err != nil {
		return "", err
	}
	return strings.Repeat(s, count), nil
}

func cappedIndent(b *budget, fn string, n int, s string) (string, error) {
	if n < 0 {
		n = 0
	}
	lines := int64(strings.Count(s, "\n")) + 1
	total := satAdd(int64(len(s)), satMul(lines, int64(n)))
	if total > maxFuncStringBytes {
		return "", tooLong(fn, total, maxFuncStringBytes)
	}
	if err := b.charge(fn, 1+total/64, total); err != nil {
		return "", err
	}
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
}

// sortAlpha is sprig's sortAlpha on a copy: sprig's sorts a []string argument in
// place, which changes the template's input.
func sortAlpha(list any) []string {
	v := reflect.Indirect(reflect.ValueOf(list))
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		a := slicesCloneStrings(sprigFuncs["toStrings"].(func(any) []string)(list))
		sort.Strings(a)
		return a
	}
	return []string{fmt.Sprint(list)}
}

// dictKeys is sprig's keys in sorted order (sprig's follows map iteration, which is
// random: the same table would render differently each time).
func dictKeys(dicts ...map[string]any) []string {
	var k []string
	for _, d := range dicts {
		for key := range d {
			k = append(k, key)
		}
	}
	sort.Strings(k)
	return k
}

// dictValues is sprig's values in the order of the sorted keys.
func dictValues(d map[string]any) []any {
	k := dictKeys(d)
	out := make([]any, len(k))
	for i, key := range k {
		out[i] = d[key]
	}
	return out
}

func slicesCloneStrings(a []string) []string { return append([]string(nil), a...) }

// chunk is sprig's mustChunk with a size check (sprig divides by the size).
func chunk(size int, list any) ([][]any, error) {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return nil, fmt.Errorf("cannot chunk type %T", list)
	}
	if size <= 0 {
		return nil, fmt.Errorf("chunk: size %d is not positive", size)
	}
	l := v.Len()
	out := make([][]any, 0, (l+size-1)/size)
	for i := 0; i < l; i += size {
		c := make([]any, 0, min(size, l-i))
		for j := i; j < l && j < i+size; j++ {
			c = append(c, v.Index(j).Interface())
		}
		out = append(out, c)
	}
	return out, nil
}

// setSpec is sprig's set, refusing to put a dict into itself.
func setSpec(b *budget) any {
	return func(d map[string]any, key string, value any) (map[string]any, error) {
		if err := b.charge("set", callWork, int64(len(key))+64); err != nil {
			return nil, err
		}
		if d == nil {
			return nil, fmt.Errorf("set: the dict is nil")
		}
		if in, err := b.containsMap("set", value, reflect.ValueOf(d)); err != nil || in {
			if err == nil {
				err = fmt.Errorf("set: the value contains the dict itself")
			}
			return nil, err
		}
		d[key] = value
		return d, nil
	}
}

// mergeSpec is sprig's merge (or mergeOverwrite), refusing to merge a dict into
// itself or a value containing it.
func mergeSpec(name string) funcSpec {
	impl := reflect.ValueOf(sprigFuncs[name])
	return func(b *budget) any {
		return func(dst map[string]any, srcs ...map[string]any) (any, error) {
			dv := reflect.ValueOf(dst)
			for _, src := range srcs {
				s, err := b.walk(name, src)
				if err != nil {
					return nil, err
				}
				if err := b.charge(name, 1, satMul(16, s.nodes)+s.bytes); err != nil {
					return nil, err
				}
				if dst == nil {
					continue
				}
				if in, err := b.containsMap(name, src, dv); err != nil || in {
					if err == nil {
						err = fmt.Errorf("%s: a source contains the destination dict", name)
					}
					return nil, err
				}
			}
			args := []reflect.Value{dv}
			for _, s := range srcs {
				args = append(args, reflect.ValueOf(s))
			}
			res := impl.Call(args)
			if len(res) == 2 && !res[1].IsNil() {
				return nil, res[1].Interface().(error)
			}
			return res[0].Interface(), nil
		}
	}
}

// printSpec is print or println, which format their arguments with fmt.
func printSpec(name string, f func(...any) string) funcSpec {
	return func(b *budget) any {
		return func(args ...any) (string, error) {
			if err := deep(1)(b, name, reflectArgs(args)); err != nil {
				return "", err
			}
			return f(args...), nil
		}
	}
}

// printfSpec is printf. Widths and precisions (at most 1e6 each in fmt, from the
// format or from '*' arguments) apply to every element of list arguments.
func printfSpec(b *budget) any {
	return func(format string, args ...any) (string, error) {
		var s valueSize
		for _, a := range args {
			as, err := b.walk("printf", a)
			if err != nil {
				return "", err
			}
			s.bytes, s.leaves = satAdd(s.bytes, as.bytes), satAdd(s.leaves, as.leaves)
		}
		pad := formatNumbers(format)
		if strings.Contains(format, "*") {
			for _, a := range args {
				if v := reflect.ValueOf(a); v.CanInt() {
					pad = satAdd(pad, min(max(v.Int(), -v.Int(), 0), 1e6))
				}
			}
		}
		n := satAdd(satAdd(int64(len(format)), satMul(4, s.bytes)), satMul(pad, max(1, s.leaves)))
		n = satAdd(n, 16*int64(len(args)))
		if err := b.charge("printf", 1+n/64, n); err != nil {
			return "", err
		}
		return fmt.Sprintf(format, args...), nil
	}
}

// formatNumbers sums the numbers in a format string (each at most fmt's 1e6).
func formatNumbers(f string) int64 {
	var sum, cur int64
	for i := 0; i <= len(f); i++ {
		if i < len(f) && f[i] >= '0' && f[i] <= '9' {
			cur = min(cur*10+int64(f[i]-'0'), 1e6+1)
			continue
		}
		sum = satAdd(sum, cur)
		cur = 0
	}
	return sum
}

// compareCost charges for the strings compared.
func compareCost(b *budget, fn string, args ...reflect.Value) error {
	var n int64
	for _, a := range args {
		a = indirectInterface(a)
		if a.Kind() == reflect.String {
			n = satAdd(n, int64(a.Len()))
		}
	}
	if n < 64 {
		return b.tick(fn)
	}
	return b.charge(fn, 1+n/64, 0)
}

func compareSpec(name string, f func(reflect.Value, ...reflect.Value) (bool, error)) funcSpec {
	return func(b *budget) any {
		return func(a reflect.Value, rest ...reflect.Value) (bool, error) {
			if err := compareCost(b, name, append(rest, a)...); err != nil {
				return false, err
			}
			return f(a, rest...)
		}
	}
}

func compare2Spec(name string, f func(reflect.Value, reflect.Value) (bool, error)) funcSpec {
	return func(b *budget) any {
		return func(a, c reflect.Value) (bool, error) {
			if err := compareCost(b, name, a, c); err != nil {
				return false, err
			}
			return f(a, c)
		}
	}
}

func indexSpec(b *budget) any {
	return func(item reflect.Value, indexes ...reflect.Value) (reflect.Value, error) {
		if err := compareCost(b, "index", indexes...); err != nil {
			return reflect.Value{}, err
		}
		return index(item, indexes...)
	}
}
