// Command kube-controller-manager is the Kubernetes controller manager, built from
// k8s.io/kubernetes for the examples' mini-cluster tests (the StatefulSet, garbage
// collector and other controllers the LeaderWorkerSet controller relies on).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
