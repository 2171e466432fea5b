// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 for the
// examples' envtest integration tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
