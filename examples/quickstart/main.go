// Command quickstart prints kplan's plans for the design scenarios, with no cluster:
//
//	go -C examples run ./quickstart
//
// It walks through seven plans, each computed by one library call from plain values,
// exactly as a controller or webhook would call it:
//
//  1. ranktable: the design's scenario (two pods with 8 NPUs each on servers
//     192.168.1.10 and 192.168.1.11) and the ConfigMap table it produces;
//  2. rollout: a gang rolling update, reconcile by reconcile;
//  3. rollout: a group (rows x columns) rolling update, reconcile by reconcile;
//  4. revision: a ConfigMapSet partition plan, and its rollback;
//  5. rdma: a joint GPU + RDMA allocation on one PCIe root;
//  6. webhookpatch: the JSON patch a mutating webhook returns for a new pod;
//  7. the example operator: a ModelServing and its pods part-way through an
//     in-place image rollout, printed as kubectl get -o yaml prints them and
//     planned from that YAML as kplan rollout plans it.
//
// Each scenario is in the file named for its package (ranktable.go, rollout.go,
// revision.go, rdma.go, webhookpatch.go) or, for the operator, modelserving.go;
// this file only runs them in order.
//
// The output is deterministic (the clock is a fixed parameter), so it is checked by a
// golden test: examples/testdata/quickstart/output.txt.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"time"
)

// now is the quickstart's clock: plans take the time as a parameter.
var now = time.Date(2025, 2, 14, 17, 51, 48, 0, time.UTC)

func main() {
	w := bufio.NewWriter(os.Stdout)
	err := run(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run prints every section to w.
func run(w io.Writer) error {
	sections := []struct {
		title string
		run   func(io.Writer) error
	}{
		{"1. ranktable: the design's scenario, 2 pods x 8 NPUs", rankTable},
		{"2. rollout: a gang rolling update, step by step", gangRollout},
		{"3. rollout: a group rolling update (rows x columns), step by step", groupRollout},
		{"4. revision: a ConfigMapSet partition plan", configMapSet},
		{"5. rdma: a joint GPU + RDMA allocation", jointAllocation},
		{"6. webhookpatch: the patch a mutating webhook returns", webhookPatch},
		{"7. operator: a ModelServing rollout as kplan rollout sees it", modelServingRollout},
	}
	for i, s := range sections {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "== %s\n\n", s.title)
		if err := s.run(w); err != nil {
			return fmt.Errorf("%s: %w", s.title, err)
		}
	}
	return nil
}
