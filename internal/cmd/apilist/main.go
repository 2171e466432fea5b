// Command apilist prints kplan's exported API, one line per identifier, and compares
// it with the checked-in listing.
//
//	go run ./internal/cmd/apilist                      # print the listing
//	go run ./internal/cmd/apilist -w api/kplan.txt     # rewrite the checked-in listing
//	go run ./internal/cmd/apilist -check api/kplan.txt # fail if the code differs from it
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/kplan-dev/kplan/internal/apilist"
)

func main() {
	write := flag.String("w", "", "write the listing to this file")
	check := flag.String("check", "", "compare the listing with this file and fail on a difference")
	flag.Parse()
	lines, err := apilist.List(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "apilist:", err)
		os.Exit(2)
	}
	out := []byte(strings.Join(lines, "\n") + "\n")
	switch {
	case *write != "":
		if err := os.WriteFile(*write, out, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "apilist:", err)
			os.Exit(2)
		}
	case *check != "":
		want, err := os.ReadFile(*check)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apilist:", err)
			os.Exit(2)
		}
		if d := apilist.Diff(strings.Split(strings.TrimSuffix(string(want), "\n"), "\n"), lines); d != "" {
			fmt.Fprintf(os.Stderr, "The exported API differs from %s (- listed, + in the code):\n%s\n"+
				"If the change is deliberate, run `go run ./internal/cmd/apilist -w %s` and name it in CHANGES.md.\n",
				*check, d, *check)
			os.Exit(1)
		}
	default:
		os.Stdout.Write(out)
	}
}
