// Package proptest sets how many cases rapid property tests run by default.
//
// rapid reads its case count from the -rapid.checks flag (100 unless given). kplan's
// CI runs the README's plain `go test ./...`, and passing -rapid.checks there breaks
// every package that does not import rapid, so packages raise the default in TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(proptest.Run(m, proptest.DefaultChecks)) }
//
// An explicit -rapid.checks on the command line still wins.
package proptest

import (
	"flag"
	"strconv"
	"testing"

	_ "pgregory.net/rapid" // registers the -rapid.* flags
)

// DefaultChecks is the number of cases each property test runs in CI.
const DefaultChecks = 1000

// Run parses the test flags, sets -rapid.checks to checks unless it was given, and
// runs the tests.
func Run(m *testing.M, checks int) int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "rapid.checks" {
			given = true
		}
	})
	if !given {
		if err := flag.Set("rapid.checks", strconv.Itoa(checks)); err != nil {
			panic(err)
		}
	}
	return m.Run()
}
