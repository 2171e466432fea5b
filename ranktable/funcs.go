package ranktable

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// Limits on what templates may produce.
const (
	// DefaultMaxOutputBytes is the default cap on one template execution's output and
	// on a rendered table: the most data a ConfigMap can hold.
	DefaultMaxOutputBytes = 1 << 20
	// MaxSequenceLength is the most elements until, untilStep and seq may return.
	MaxSequenceLength = 1 << 16
	// MaxFuncStringBytes is the most bytes repeat, indent and nindent may return.
	MaxFuncStringBytes = 1 << 20
	// MaxAnnotationBytes is the largest pod annotation that is decoded: the API
	// server's limit for all annotations of an object together.
	MaxAnnotationBytes = 256 << 10
)

// ErrOutputTooLarge is wrapped by every error caused by a template or a rendered table
// exceeding a size limit. Test for it with errors.Is.
var ErrOutputTooLarge = errors.New("output too large")

// removedFuncs are sprig functions left out beyond sprig's own hermetic list: they read
// the clock or randomness, or are of no use in a rank table.
var removedFuncs = []string{
	"ago", "randInt", "shuffle", "bcrypt", "htpasswd", "genPrivateKey",
	"genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
	"genSignedCert", "genSignedCertWithKey", "buildCustomCert", "encryptAES",
	"decryptAES", "derivePassword",
}

// funcMap is built once; text/template copies it into each parsed template.
var funcMap = buildFuncMap()

// FuncMap returns a copy of the functions ranktable and parser templates can call:
// sprig's hermetic text functions without the clock, randomness, environment and
// crypto functions, with size-capped until, untilStep, seq, repeat, indent and
// nindent, and with fromJson and toJson that report errors instead of hiding them.
// Parser templates can call podIP, nodeName, podName and podNamespace as well.
func FuncMap() template.FuncMap {
	m := make(template.FuncMap, len(funcMap))
	for k, v := range funcMap {
		m[k] = v
	}
	return m
}

func buildFuncMap() template.FuncMap {
	m := sprig.HermeticTxtFuncMap()
	for _, n := range removedFuncs {
		delete(m, n)
	}
	m["until"] = cappedUntil
	m["untilStep"] = cappedUntilStep
	m["seq"] = cappedSeq
	m["repeat"] = cappedRepeat
	m["indent"] = cappedIndent
	m["nindent"] = func(n int, s string) (string, error) {
		r, err := cappedIndent(n, s)
		return "\n" + r, err
	}
	m["fromJson"] = fromJSON
	m["toJson"] = toJSON
	return m
}

func tooLong(fn string, n int64, limit int) error {
	return fmt.Errorf("%s: %d exceeds the limit of %d: %w", fn, n, limit, ErrOutputTooLarge)
}

func cappedUntilStep(start, stop, step int) ([]int, error) {
	if step == 0 {
		return nil, nil
	}
	n := (int64(stop) - int64(start)) / int64(step)
	if n < 0 {
		return nil, nil
	}
	if n > MaxSequenceLength {
		return nil, tooLong("untilStep", n, MaxSequenceLength)
	}
	out := make([]int, 0, n+1)
	if step > 0 {
		for i := start; i < stop; i += step {
			out = append(out, i)
		}
	} else {
		for i := start; i > stop; i += step {
			out = append(out, i)
		}
	}
	return out, nil
}

func cappedUntil(count int) ([]int, error) {
	if count < 0 {
		return cappedUntilStep(0, count, -1)
	}
	return cappedUntilStep(0, count, 1)
}

// cappedSeq mirrors sprig's seq (the Unix seq command) for integer arguments.
func cappedSeq(params ...int) (string, error) {
	start, stop, step := 1, 0, 1
	switch len(params) {
	case 0:
		return "", nil
	case 1:
		stop = params[0]
	case 2:
		start, stop = params[0], params[1]
		if start > stop {
			step = -1
		}
	case 3:
		start, step, stop = params[0], params[1], params[2]
	default:
		return "", fmt.Errorf("seq: at most 3 arguments, got %d", len(params))
	}
	if step == 0 || (step > 0 && start > stop) || (step < 0 && start < stop) {
		return "", nil
	}
	n := (int64(stop)-int64(start))/int64(step) + 1
	if n > MaxSequenceLength {
		return "", tooLong("seq", n, MaxSequenceLength)
	}
	var b strings.Builder
	for i := int64(0); i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, int64(start)+i*int64(step))
	}
	return b.String(), nil
}

func cappedRepeat(count int, s string) (string, error) {
	if count <= 0 {
		return "", nil
	}
	if n := int64(count) * int64(len(s)); n > MaxFuncStringBytes {
		return "", tooLong("repeat", n, MaxFuncStringBytes)
	}
	return strings.Repeat(s, count), nil
}

func cappedIndent(n int, s string) (string, error) {
	if n < 0 {
		n = 0
	}
	lines := int64(strings.Count(s, "\n") + 1)
	if total := int64(len(s)) + lines*int64(n); total > MaxFuncStringBytes {
		return "", tooLong("indent", total, MaxFuncStringBytes)
	}
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
}

func fromJSON(s string) (any, error) {
	if len(s) > MaxAnnotationBytes {
		return nil, tooLong("fromJson", int64(len(s)), MaxAnnotationBytes)
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("fromJson: %w", err)
	}
	return v, nil
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toJson: %w", err)
	}
	return string(b), nil
}

// cappedBuffer is an io.Writer that fails once more than limit bytes are written, so
// text/template stops executing a template whose output explodes.
type cappedBuffer struct {
	buf   []byte
	limit int
}

func (w *cappedBuffer) Write(p []byte) (int, error) {
	if len(w.buf)+len(p) > w.limit {
		return 0, fmt.Errorf("more than %d bytes: %w", w.limit, ErrOutputTooLarge)
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// execute runs t on data into a buffer capped at limit bytes. buf is reused.
func execute(t *template.Template, data any, limit int, buf []byte) ([]byte, error) {
	w := cappedBuffer{buf: buf[:0], limit: limit}
	if err := t.Execute(&w, data); err != nil {
		return nil, err
	}
	return w.buf, nil
}
