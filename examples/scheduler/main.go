// Command kube-scheduler is the stock Kubernetes scheduler with kplan's RDMA plugin
// (package rdmaplugin) registered as an out-of-tree plugin. Enable it with a
// KubeSchedulerConfiguration such as config/scheduler-config.yaml, which names the
// kubeconfig in clientConnection.kubeconfig (with --config, kube-scheduler ignores
// --kubeconfig; empty means the in-cluster config):
//
//	go run . --config=config/scheduler-config.yaml
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/kplan-dev/kplan/examples/scheduler/rdmaplugin"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand(app.WithPlugin(rdmaplugin.Name, rdmaplugin.New))))
}
