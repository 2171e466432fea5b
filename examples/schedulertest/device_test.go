package schedulertest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/rdma"
)

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// metricsArgs serve the scheduler's /metrics on port without authentication.
func metricsArgs(port int) []string {
	return []string{fmt.Sprintf("--secure-port=%d", port), "--bind-address=127.0.0.1",
		"--authorization-always-allow-paths=/metrics", "--authentication-skip-lookup"}
}

// scrape returns the scheduler's metric lines that start with prefix.
func scrape(t *testing.T, ctx context.Context, port int, prefix string) []string {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s %v: %.200s", resp.Status, err, b)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// waitMetrics waits until the scheduler's metric lines starting with prefix are want.
func waitMetrics(t *testing.T, ctx context.Context, port int, prefix string, want ...string) {
	t.Helper()
	var got []string
	err := func() error {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if got = scrape(t, ctx, port, prefix); slices.Equal(got, want) {
				return nil
			}
			time.Sleep(200 * time.Millisecond)
		}
		return fmt.Errorf("metrics %s: %q, want %q", prefix, got, want)
	}()
	if err != nil {
		t.Fatal(err)
	}
}

// updateDevice replaces the spec of node n's Device object with n's devices, and
// optionally its labels.
func updateDevice(t *testing.T, ctx context.Context, n rdma.Node, labels map[string]string) {
	t.Helper()
	obj, err := deviceObject(n)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := dyn.Resource(deviceGVR).Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	obj.SetLabels(labels)
	if _, err := dyn.Resource(deviceGVR).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestDeviceProblemsReported: a Device object with three VFs whose PCI addresses are
// not valid (0000:10:00.8, .9 and .a, as in koordinator's fixture) gets one Warning
// event (on the Device object), one log line and the metric
// kplan_rdma_device_vfs_skipped; the node's other VFs are used. A change of the
// object that leaves its problems as they were reports nothing new; making the
// object invalid reports that (kplan_rdma_device_invalid); fixing it removes the
// metrics.
func TestDeviceProblemsReported(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "device-problems")
	n := makeNode("dev-problems", shape{roots: 1, pfs: 1, vfs: 4})
	valid := makeNode("dev-problems", shape{roots: 1, pfs: 1, vfs: 4})
	g := &n.Devices[0].VFGroups[0]
	for i, f := range []string{"8", "9", "a"} {
		g.VFs = append(g.VFs, rdma.VirtualFunction{Minor: int32(4 + i), BusID: "0000:10:00." + f})
	}
	createNodes(t, ctx, n)
	port := freePort(t)
	s := startScheduler(t, nil, metricsArgs(port)...)

	ev := waitDeviceEvents(t, ctx, n.Name, reasonDeviceSkip, 1)
	if !strings.Contains(ev[0].Note, "3 VFs left out") || !strings.Contains(ev[0].Note, "0000:10:00.8") {
		t.Errorf("event note %q does not say which VFs were left out", ev[0].Note)
	}
	if ev[0].Regarding.Kind != "Device" {
		t.Errorf("event regarding %+v, want the Device object", ev[0].Regarding)
	}
	waitMetrics(t, ctx, port, "kplan_rdma_device", `kplan_rdma_device_vfs_skipped{node="dev-problems"} 3`)
	if c := s.logCount(`reason="`+reasonDeviceSkip+`"`, n.Name); c != 1 {
		t.Errorf("%d log lines report the Device object's VFs, want 1", c)
	}
	createPod(t, ctx, pinned(makePod(t, ns, "uses-valid-vfs", podSpec{rdma: 4}), n.Name))
	waitBound(t, ctx, ns, "uses-valid-vfs")

	// A change that leaves the problems as they were: nothing new.
	updateDevice(t, ctx, n, map[string]string{"touched": "yes"})
	time.Sleep(2 * time.Second)
	waitDeviceEvents(t, ctx, n.Name, reasonDeviceSkip, 1)
	if c := s.logCount(`reason="`+reasonDeviceSkip+`"`, n.Name); c != 1 {
		t.Errorf("%d log lines report the Device object's VFs after an unrelated change, want 1", c)
	}

	invalid := valid
	invalid.Devices = append(slices.Clone(valid.Devices), valid.Devices[0])
	updateDevice(t, ctx, invalid, nil)
	ev = waitDeviceEvents(t, ctx, n.Name, reasonDeviceBad, 1)
	if !strings.Contains(ev[0].Note, "Duplicate value") {
		t.Errorf("event note %q does not name the duplicate", ev[0].Note)
	}
	waitMetrics(t, ctx, port, "kplan_rdma_device", `kplan_rdma_device_invalid{node="dev-problems"} 1`)

	updateDevice(t, ctx, valid, nil)
	waitMetrics(t, ctx, port, "kplan_rdma_device")
}
