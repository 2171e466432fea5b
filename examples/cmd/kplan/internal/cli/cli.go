package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/manifest"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // bad input: the plan could not be made
	ExitUsage = 2 // bad command line
)

// command is one subcommand.
type command struct {
	name, summary, usage string
	// flags registers the command's own flags on fs.
	flags func(fs *flag.FlagSet, o *options)
	// run plans from the objects and returns the value to print.
	run func(o *options, objs []manifest.Object) (any, error)
}

var commands = []*command{rankTableCommand, rolloutCommand, revisionCommand, rdmaCommand, patchCommand}

// usageError is a bad command line: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// Main runs kplan with args (without the program name) and returns the exit code.
// The plan goes to stdout only when it is complete; errors are one line on stderr.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "kplan: no command (want one of %s; see kplan --help)\n", commandNames())
		return ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, mainUsage())
		return ExitOK
	}
	var cmd *command
	for _, c := range commands {
		if c.name == args[0] {
			cmd = c
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "kplan: unknown command %q (want one of %s; see kplan --help)\n", args[0], commandNames())
		return ExitUsage
	}
	out, warnings, err := runCommand(cmd, args[1:], stdin)
	var ue usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, commandUsage(cmd))
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "kplan %s: %s (see kplan %s --help)\n", cmd.name, oneLine(err.Error()), cmd.name)
		return ExitUsage
	case err != nil:
		fmt.Fprintf(stderr, "kplan %s: %s\n", cmd.name, oneLine(err.Error()))
		return ExitError
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "kplan %s: warning: %s\n", cmd.name, printable(oneLine(w)))
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "kplan %s: writing the plan: %s\n", cmd.name, oneLine(err.Error()))
		return ExitError
	}
	return ExitOK
}

// printable escapes the characters of s that a terminal would act on or not show.
func printable(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r == ' ' || unicode.IsGraphic(r):
			b.WriteString(s[:size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		s = s[size:]
	}
	return b.String()
}

// runCommand parses the flags, reads the manifests, plans, and renders the output; it
// also returns the warnings the command reported.
func runCommand(cmd *command, args []string, stdin io.Reader) ([]byte, []string, error) {
	o := &options{}
	out, err := o.runCommand(cmd, args, stdin)
	if err != nil {
		return nil, nil, err
	}
	return out, o.warnings, nil
}

func (o *options) runCommand(cmd *command, args []string, stdin io.Reader) ([]byte, error) {
	fs := flag.NewFlagSet("kplan "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&o.files, "f", "manifest file, directory, or - for stdin (repeatable)")
	fs.StringVar(&o.output, "o", "yaml", "output format: yaml or json")
	cmd.flags(fs, o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err.Error()}
	}
	o.flags = fs
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (manifests are given with -f)", fs.Arg(0))
	}
	if len(o.files) == 0 {
		return nil, usagef("no manifests: give -f FILE, -f DIR or -f - for stdin")
	}
	switch o.output {
	case "yaml", "json":
	case "table":
		if !o.simulate {
			return nil, usagef("-o table needs --simulate")
		}
	default:
		return nil, usagef("-o %q: want yaml or json", o.output)
	}
	objs, err := manifest.Read(manifest.OSFS{}, o.files, stdin)
	if err != nil {
		return nil, err
	}
	if err := manifest.Dedupe(objs, defaultNamespace); err != nil {
		return nil, err
	}
	v, err := cmd.run(o, objs)
	if err != nil {
		return nil, err
	}
	if t, ok := v.(tableOutput); ok && (o.output == "table" || !o.given("o")) {
		return t.Table(), nil
	}
	return render(v, o.output)
}

// given reports whether a flag was on the command line.
func (o *options) given(name string) bool {
	found := false
	o.flags.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// tableOutput is a result printed as a table by default (rollout --simulate).
type tableOutput interface{ Table() []byte }

// render marshals v as YAML or JSON.
func render(v any, format string) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("rendering the plan: %v", err)
	}
	if format == "json" {
		return append(b, '\n'), nil
	}
	y, err := yaml.JSONToYAML(b)
	if err != nil {
		return nil, fmt.Errorf("rendering the plan: %v", err)
	}
	return y, nil
}

// convert maps a plan's list to its printed form: nil for an empty list, so that a
// list printed with omitempty is left out.
func convert[T, U any](in []T, f func(T) U) []U {
	if len(in) == 0 {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func mainUsage() string {
	var b strings.Builder
	b.WriteString(`kplan prints what kplan's planning functions would do, from manifests as
"kubectl get -o yaml" prints them (single objects, Lists, multi-document files).

Usage:
  kplan COMMAND -f FILE|DIR|- [-f ...] [-o yaml|json] [flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, `
Run "kplan COMMAND --help" for a command's flags. Exit codes: 0 plan printed,
1 bad input (one line on stderr naming the file and object), 2 bad usage.
All -f inputs together may hold at most %d MiB, %d objects and %d YAML nodes.
`, manifest.MaxBytes>>20, manifest.MaxObjects, manifest.MaxNodes)
	return b.String()
}

func commandUsage(cmd *command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kplan %s: %s\n\n%s\nFlags:\n", cmd.name, cmd.summary, cmd.usage)
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	o := &options{}
	fs.Var(&o.files, "f", "manifest file, directory, or - for stdin (repeatable)")
	fs.StringVar(&o.output, "o", "yaml", "output format: yaml or json")
	cmd.flags(fs, o)
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return b.String()
}

func commandNames() string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

// oneLine makes sure an error is printed on one line, with every unprintable
// character (a terminal escape sequence in a label value, say) escaped.
func oneLine(s string) string { return manifest.OneLine(s) }
