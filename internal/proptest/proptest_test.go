package proptest

import (
	"flag"
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Run(m, 1234)) }

func TestDefaultIsApplied(t *testing.T) {
	f := flag.Lookup("rapid.checks")
	if f == nil {
		t.Fatal("rapid did not register -rapid.checks")
	}
	given := false
	flag.Visit(func(v *flag.Flag) { given = given || v.Name == "rapid.checks" })
	if f.Value.String() != "1234" && !given {
		t.Fatalf("rapid.checks = %s, want 1234", f.Value.String())
	}
}
