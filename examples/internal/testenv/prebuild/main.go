// Command prebuild builds the envtest binaries (kube-apiserver and etcd) and
// kube-scheduler with kplan's RDMA plugin into examples/.envtest/bin ahead of the
// tests, so the first test binary does not spend minutes building them inside go
// test's timeout:
//
//	go -C examples run ./internal/testenv/prebuild
//
// It prints the directory holding kube-apiserver and etcd (KUBEBUILDER_ASSETS when
// that holds them) and then the path of the scheduler.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/kplan-dev/kplan/examples/internal/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	dir, err := testenv.EnsureBinaries(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "envtest binaries ready in %s\n", time.Since(start).Round(time.Second))
	start = time.Now()
	sched, err := testenv.EnsureScheduler(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "kube-scheduler ready in %s\n", time.Since(start).Round(time.Second))
	fmt.Println(dir)
	fmt.Println(sched)
}
