package clustertest_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kplan-dev/kplan/examples/clustertest"
)

// cluster is the package's cluster, started once by TestMain.
var (
	cluster  *clustertest.Cluster
	setupErr error
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	// KPLAN_TEST_VERBOSE=1 copies the controllers' logs (kplan's operator's too) to
	// stderr.
	verbose := os.Getenv("KPLAN_TEST_VERBOSE") != ""
	if verbose {
		ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	} else {
		ctrllog.SetLogger(logr.Discard())
	}
	if testing.Short() {
		return m.Run()
	}
	cluster, setupErr = clustertest.Start(context.Background(), clustertest.Options{Log: os.Stderr, Verbose: verbose, Env: operatorEnv})
	if setupErr == nil {
		defer func() {
			if err := cluster.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "stop the cluster:", err)
			}
		}()
		var stop func()
		if stop, setupErr = startOperator(context.Background()); setupErr == nil {
			defer stop()
		}
	}
	return m.Run()
}

// needCluster skips in -short mode and fails when the cluster did not start; when
// the test fails, it prints the controllers' logs.
func needCluster(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts kube-apiserver, kube-controller-manager and the LWS controller")
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller logs:\n%s", cluster.Logs(60))
		}
	})
}
