// Command kplan prints what kplan's planning functions would do, from manifests as
// "kubectl get -o yaml" prints them:
//
//	kplan ranktable -f owner.yaml -f pods.yaml     the ranktable ConfigMaps and group status
//	kplan rollout   -f sts.yaml -f pods.yaml       the next rollout step (--simulate: all of them)
//	kplan revision  -f set.yaml -f pods.yaml       a ConfigMapSet plan
//	kplan rdma      -f device.yaml -f pods.yaml    an RDMA (and GPU) allocation for a pod
//	kplan patch     -f pod.yaml -f owner.yaml      the webhook patch for a pod
//
// Output is YAML (-o json for JSON). Bad input prints one line on stderr naming the
// file and object and exits 1; usage errors exit 2. See kplan --help.
package main

import (
	"os"

	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
