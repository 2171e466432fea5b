// Command configmapset-reload is the ConfigMapSet reload sidecar that the example
// operator's webhook injects into pods: it writes the pod's wanted revision of a
// ConfigMapSet's files into the shared volume and marks the pod current. See package
// github.com/kplan-dev/kplan/examples/reload.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kplan-dev/kplan/examples/reload"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := reload.Main(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}
