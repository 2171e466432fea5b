// Command prebuild builds the envtest binaries (kube-apiserver and etcd),
// kube-scheduler with kplan's RDMA plugin, kube-controller-manager and the
// LeaderWorkerSet controller into examples/.envtest/bin ahead of the tests, so the
// first test binary does not spend minutes building them inside go test's timeout:
//
//	go -C examples run ./internal/testenv/prebuild
//
// It prints the directory holding kube-apiserver and etcd (KUBEBUILDER_ASSETS when
// that holds them) and then the paths of the scheduler, the controller manager and
// the LWS controller, one a line.
package main

import (
	"context"
	"fmt"
	"io"
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
	paths := []string{dir, sched}
	for _, b := range []struct {
		name   string
		ensure func(context.Context, io.Writer) (string, error)
	}{
		{"kube-controller-manager", testenv.EnsureControllerManager},
		{"lws-controller", testenv.EnsureLWS},
	} {
		start = time.Now()
		p, err := b.ensure(ctx, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "%s ready in %s\n", b.name, time.Since(start).Round(time.Second))
		paths = append(paths, p)
	}
	for _, p := range paths {
		fmt.Println(p)
	}
}
