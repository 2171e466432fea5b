package ranktable

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/internal/podfixture"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testOwner(name string) Owner {
	return Owner{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-ms-default-" + name)},
		GVK:        schema.GroupVersionKind{Group: "workload.kthena.io", Version: "v1alpha1", Kind: "ModelServing"},
	}
}

// designAnnotation returns the design's ascend.com/ranktable JSON for a pod.
func designAnnotation(pod, server string, ips ...string) string {
	devs := make([]map[string]string, len(ips))
	for i, ip := range ips {
		devs[i] = map[string]string{"device_id": fmt.Sprint(i), "device_ip": ip}
	}
	b, _ := json.Marshal(map[string]any{"pod_name": pod, "server_id": server, "devices": devs})
	return string(b)
}

// designGrouping groups the design's pods, which carry a role label and no
// serving-group label: the owner is one serving group.
var designGrouping = Grouping{SingleGroup: true}

// designPods returns the design's scenario pods: qwen-inference-worker-0/1 on servers
// 192.168.1.10/11 with 8 NPUs each, owned by o.
func designPods(o Owner) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("qwen-inference-worker-%d", i)
		ipsi := make([]string, 8)
		for d := range ipsi {
			ipsi[d] = fmt.Sprintf("10.20.0.%d", 2+8*i+d)
		}
		pods = append(pods, podfixture.Pod("default", name,
			podfixture.Labels(LabelRole, "worker"),
			podfixture.Owner(o.GVK.GroupVersion().String(), o.GVK.Kind, o.Name, string(o.UID)),
			podfixture.Annotation(DefaultAnnotationName, designAnnotation(name, fmt.Sprintf("192.168.1.%d", 10+i), ipsi...)),
			podfixture.Containers("inference"),
			podfixture.Created(t0)))
	}
	return pods
}

// withoutNative returns a copy of t that renders through text/template even when t
// is a library template with a native renderer.
func withoutNative(t *Template) *Template {
	c := *t
	c.native = nil
	return &c
}

func mustLibrary(t testing.TB, name string, opts LoadOptions) *Template {
	t.Helper()
	tm, err := LoadLibraryTemplate(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

var _ = strings.TrimSpace
