// Package perf runs Kubernetes' scheduler benchmark (scheduler_perf, from
// k8s.io/kubernetes/test/integration/scheduler_perf) with the KplanRDMA plugin: an
// in-process kube-apiserver and kube-scheduler, etcd as a process (from PATH), the
// workloads of performance-config.yaml. See README.md.
package perf

import (
	"fmt"
	"os"
	"testing"

	_ "k8s.io/component-base/logs/json/register"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"

	"github.com/kplan-dev/kplan/examples/scheduler/rdmaplugin"
)

func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// BenchmarkPerfScheduling runs the workloads labelled "performance" (select others
// with -perf-scheduling-label-filter), each test case with its own scheduler
// configuration: the plugin's, or the default profile.
func BenchmarkPerfScheduling(b *testing.B) {
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "kplan", frameworkruntime.Registry{rdmaplugin.Name: rdmaplugin.New})
}
