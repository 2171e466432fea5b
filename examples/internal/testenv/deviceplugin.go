package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/ranktable"
)

// DevicePlugin plays the Ascend device plugin for one namespace: every pod bound
// to a node gets the ascend.com/ranktable annotation (ranktable's
// DefaultAnnotationName) with a server of its own and 8 devices, as the plugin
// writes it on allocation. A recreated pod (new UID) is a new server.
type DevicePlugin struct {
	c  client.Client
	ns string

	mu    sync.Mutex
	byUID map[types.UID]string
	pods  map[string]*corev1.Pod // by server: the pod as first annotated
}

// StartDevicePlugin annotates the bound pods of namespace ns every 50 ms until
// ctx is done or Stop is called.
func StartDevicePlugin(ctx context.Context, c client.Client, ns string) (*DevicePlugin, func()) {
	dp := &DevicePlugin{c: c, ns: ns, byUID: map[types.UID]string{}, pods: map[string]*corev1.Pod{}}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				dp.annotateBound(ctx)
			}
		}
	}()
	return dp, func() { cancel(); <-done }
}

// Server returns the server the plugin gave the pod of that UID ("" when none).
func (dp *DevicePlugin) Server(uid types.UID) string {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	return dp.byUID[uid]
}

// Pod returns the pod a server was given to, as it was when annotated (nil when
// none).
func (dp *DevicePlugin) Pod(server string) *corev1.Pod {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	return dp.pods[server]
}

func (dp *DevicePlugin) annotateBound(ctx context.Context) {
	var pods corev1.PodList
	if err := dp.c.List(ctx, &pods, client.InNamespace(dp.ns)); err != nil {
		return // listed again at the next tick
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Annotations[ranktable.DefaultAnnotationName] != "" {
			continue
		}
		dp.mu.Lock()
		server, ok := dp.byUID[p.UID]
		if !ok {
			n := len(dp.byUID) + 1
			server = fmt.Sprintf("192.168.%d.%d", n/250, n%250)
			dp.byUID[p.UID] = server
			dp.pods[server] = p.DeepCopy()
		}
		dp.mu.Unlock()
		devs := make([]map[string]string, 8)
		for d := range devs {
			devs[d] = map[string]string{"device_id": fmt.Sprint(d), "device_ip": fmt.Sprintf("10.%s.%d", strings.TrimPrefix(server, "192.168."), d)}
		}
		value, _ := json.Marshal(map[string]any{"pod_name": p.Name, "server_id": server, "devices": devs})
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": p.UID, "annotations": map[string]string{ranktable.DefaultAnnotationName: string(value)}}})
		_ = dp.c.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)) // retried at the next tick
	}
}
