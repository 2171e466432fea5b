package ranktables

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The design's metrics, registered on controller-runtime's registry (served by the
// manager's metrics endpoint).
var (
	generationDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ranktable_generation_duration_seconds",
		Help:    "Time ranktable.Plan took for one owner.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
	})
	generationErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ranktable_generation_errors_total",
		Help: "Ranktable groups that failed to generate, and plans that could not run.",
	})
	configMapUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ranktable_configmap_updates_total",
		Help: "Ranktable ConfigMaps written, by action (create, update, delete).",
	}, []string{"action"})
)

func init() {
	metrics.Registry.MustRegister(generationDuration, generationErrors, configMapUpdates)
}
