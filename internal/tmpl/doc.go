// Package tmpl runs text/template templates with sprig's functions hermetically and
// under a budget, for templates that users of a controller write and the controller
// runs.
//
// Parse takes a Spec (the text, text/template's missingkey option, the Limits of each
// execution and the names of late-bound values) and returns a Program; Program.Execute
// runs it on data with an output cap and the values of this execution. A Program is
// immutable and safe for concurrent use.
//
// Hermetic: sprig's functions that read the clock, the time zone, the environment,
// the network or the operating system, are random, or whose output is not bounded by
// their input are removed, and a template naming one fails to parse with the reason.
// Functions whose results follow map order (keys, values) are sorted; sortAlpha sorts
// a copy; fromJson and toJson report errors.
//
// Budgeted: every function charges its work and the bytes it builds before it runs;
// the parse tree is rewritten so that every range charges its iterations times its
// body, every template call the called template, and every printed list or dict its
// size; recursive templates are rejected; values nest at most MaxValueDepth levels and
// never contain themselves; single results are capped (MaxSequenceLength,
// MaxFuncStringBytes, MaxRegexpSize, MaxFromJSONBytes). Exceeding a limit fails the
// execution with an error wrapping ErrBudgetExceeded or ErrOutputTooLarge.
//
// The engine knows nothing of its callers: what a template's dot is, which values are
// late-bound and how errors are reported to the template's author are theirs.
package tmpl
