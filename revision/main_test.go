package revision

import (
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/internal/podfixture"
	"github.com/kplan-dev/kplan/internal/proptest"
)

func TestMain(m *testing.M) { os.Exit(proptest.Run(m, proptest.DefaultChecks)) }

// t0 is the fixtures' epoch: sets are created at t0, pods after it.
var t0 = time.Date(2025, 2, 14, 17, 0, 0, 0, time.UTC)

// newSet returns a valid set "cms1" in namespace "ns" created at t0 with one
// container "main" mounted at /data/conf.
func newSet(data map[string]string, opts ...func(*ConfigMapSet)) *ConfigMapSet {
	s := &ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cms1", Generation: 1, CreationTimestamp: metav1.NewTime(t0)},
		Spec: ConfigMapSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"}},
			Data:       data,
			Containers: []ContainerInjectSpec{{Name: "main", MountPath: "/data/conf"}},
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func partition(v intstr.IntOrString) func(*ConfigMapSet) {
	return func(s *ConfigMapSet) { s.Spec.UpdateStrategy.Partition = &v }
}

func restartWith(mu intstr.IntOrString) func(*ConfigMapSet) {
	return func(s *ConfigMapSet) {
		s.Spec.UpdateStrategy.RestartInjectedContainers = true
		s.Spec.UpdateStrategy.MaxUnavailable = &mu
	}
}

// testKeys are the keys of set "cms1".
var testKeys = mustKeys("cms1")

func mustKeys(name string) Keys {
	k, err := KeysFor(name)
	if err != nil {
		panic(err)
	}
	return k
}

// revPod returns pod ns/name of set cms1, injected (it has the reload sidecar) and
// created one minute after t0, with the wanted and current revisions given (""
// leaves the annotation out).
func revPod(name, wanted, current string, ready bool) *corev1.Pod {
	opts := []podfixture.Option{podfixture.Labels("app", "sample"), podfixture.InitContainers(ReloadSidecarName("cms1")), podfixture.Containers("main"), podfixture.Created(t0.Add(time.Minute))}
	if wanted != "" {
		opts = append(opts, podfixture.Annotation(testKeys.UpdateRevision, wanted), podfixture.Annotation(testKeys.UpdateRevisionTimestamp, FormatTimestamp(t0)))
	}
	if current != "" {
		opts = append(opts, podfixture.Annotation(testKeys.CurrentRevision, current), podfixture.Annotation(testKeys.CurrentRevisionTimestamp, FormatTimestamp(t0)))
	}
	if ready {
		opts = append(opts, podfixture.Ready())
	} else {
		opts = append(opts, podfixture.NotReady())
	}
	return podfixture.Pod("ns", name, opts...)
}

// hubOf returns the hub ConfigMap holding the given data, oldest first, and their
// revision names.
func hubOf(t testing.TB, datas ...map[string]string) (*corev1.ConfigMap, []string) {
	t.Helper()
	var h Hub
	var names []string
	for _, d := range datas {
		r, err := h.Add(d, 0)
		if err != nil {
			t.Fatal(err)
		}
		h = r.Hub
		names = append(names, r.Name)
	}
	cm, err := h.HubConfigMap("ns", "cms1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return cm, names
}

func data(v string) map[string]string { return map[string]string{"settings.yaml": "value: " + v} }
