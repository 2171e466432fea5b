// The template budget's settings: templates run on the module's template engine,
// which holds the budget itself.

package ranktable

import "github.com/kplan-dev/kplan/internal/tmpl"

// Defaults of the template budget (LoadOptions.MaxTemplateWork and
// LoadOptions.MaxTemplateValueBytes).
const (
	// DefaultMaxTemplateWork is the default work limit of one template execution. A
	// unit is about one evaluation step: a function call, one iteration of a range
	// body (counted per action in the body), a template call, about 64 bytes a function
	// reads, or one element of a value a function walks. Rendering a 1024-pod x 16-NPU
	// table through the MindIE template takes about 0.5 million units; a template that
	// uses up the default stops within about a quarter of a second of CPU time.
	DefaultMaxTemplateWork = 5_000_000
	// DefaultMaxTemplateValueBytes is the default limit on the bytes of all values the
	// functions of one template execution build (strings, lists, dicts), counted
	// before they are built and never given back: an upper bound on the memory one
	// execution holds besides its output.
	DefaultMaxTemplateValueBytes = 16 << 20
)

// ErrBudgetExceeded is wrapped by every error caused by a template execution using more
// work or building more bytes of values than its budget allows, or building a value
// nested too deeply. Test for it with errors.Is.
var ErrBudgetExceeded = tmpl.ErrBudgetExceeded

// ErrOutputTooLarge is wrapped by every error caused by a template or a rendered table
// exceeding a size limit. Test for it with errors.Is.
var ErrOutputTooLarge = tmpl.ErrOutputTooLarge
