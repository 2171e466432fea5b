package ranktable_test

import (
	"fmt"
	"time"

	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/webhookpatch"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func ExampleLoadTemplate() {
	rt := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "my-template", Namespace: "kthena-system"},
		Data: map[string]string{
			"inference-engine":    "mindie",
			"ranktable-level":     "role",
			"pod-parser-template": "builtin:ranktable-json",
			"ranktable-template":  `{"servers": {{ .ServerCount }}, "secret": "{{ env "TOKEN" }}"}`,
		},
	}
	_, err := ranktable.LoadTemplate(rt, nil, ranktable.LoadOptions{})
	fmt.Println(err)
	// Output:
	// ranktable template ConfigMap kthena-system/my-template: data[ranktable-template]: template: kthena-system/my-template:1: function "env" not defined
}

func ExampleBuild() {
	dev := func(id, ip string) ranktable.Device { return ranktable.Device{ID: id, IP: ip} }
	members := []ranktable.Member{
		{Pod: "default/b", RankIndex: -1, Data: ranktable.PodData{ServerID: "192.168.1.10", Devices: []ranktable.Device{dev("10", "10.0.1.11"), dev("9", "10.0.1.10")}}},
		{Pod: "default/a", RankIndex: -1, Data: ranktable.PodData{ServerID: "192.168.1.9", Devices: []ranktable.Device{dev("0", "10.0.0.1")}}},
	}
	for _, order := range []ranktable.Order{ranktable.Natural, ranktable.Lexicographic} {
		table, err := ranktable.Build(members, ranktable.BuildOptions{Order: order})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Print(order, ":")
		for _, s := range table.Servers {
			for _, d := range s.Devices {
				fmt.Printf(" %s/%s=%s", s.ServerId, d.DeviceId, d.RankId)
			}
		}
		fmt.Println()
	}
	// Output:
	// Natural: 192.168.1.9/0=0 192.168.1.10/9=1 192.168.1.10/10=2
	// Lexicographic: 192.168.1.10/10=0 192.168.1.10/9=1 192.168.1.9/0=2
}

func ExamplePlan() {
	tmpl, err := ranktable.LoadLibraryTemplate(ranktable.LibraryMindIERole, ranktable.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	owner := ranktable.Owner{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "default", UID: "ms-uid"},
		GVK:        schema.GroupVersionKind{Group: "workload.kthena.io", Version: "v1alpha1", Kind: "ModelServing"},
	}
	yes := true
	pod := func(name, ann string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels:          map[string]string{ranktable.LabelGroupName: "qwen-0", ranktable.LabelRoleID: "worker-0"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "workload.kthena.io/v1alpha1", Kind: "ModelServing", Name: "qwen", UID: "ms-uid", Controller: &yes}},
		}}
		if ann != "" {
			p.Annotations = map[string]string{ranktable.DefaultAnnotationName: ann}
		}
		return p
	}
	pods := []*corev1.Pod{
		pod("qwen-0-worker-0-0", `{"pod_name":"qwen-0-worker-0-0","server_id":"192.168.1.10","devices":[{"device_id":"0","device_ip":"10.20.0.2"}]}`),
		pod("qwen-0-worker-0-1", ""),
	}
	in := ranktable.Input{Owner: owner, Template: tmpl, Pods: pods, Now: time.Unix(0, 0), Timeout: time.Minute}
	res, _ := ranktable.Plan(in)
	for _, g := range res.Groups {
		fmt.Println(g.Group, g.ConfigMapName, g.Phase, g.Missing)
	}
	fmt.Println(res.ConfigMaps[0].Action, res.RequeueAfter)

	in.Pods[1] = pod("qwen-0-worker-0-1", `{"pod_name":"qwen-0-worker-0-1","server_id":"192.168.1.11","devices":[{"device_id":"0","device_ip":"10.20.0.3"}]}`)
	in.ConfigMaps = []*corev1.ConfigMap{res.ConfigMaps[0].ConfigMap}
	res, _ = ranktable.Plan(in)
	fmt.Println(res.Groups[0].Phase, res.ConfigMaps[0].Action, len(res.ConfigMaps[0].ConfigMap.Data["ranktable.json"]), "bytes")
	for _, e := range res.Events {
		fmt.Println(e.Reason, e.Object)
	}
	// Output:
	// qwen-0/worker-0 qwen-0-worker-0-ranktable Waiting [default/qwen-0-worker-0-1]
	// create 5s
	// Completed update 460 bytes
	// RanktableGenerated default/qwen-0-worker-0-ranktable
}

func ExampleInject() {
	tmpl, _ := ranktable.LoadLibraryTemplate(ranktable.LibraryMindIERole, ranktable.LoadOptions{})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen-0-worker-0-0", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie"}}},
	}
	mutated := pod.DeepCopy()
	if _, err := ranktable.Inject(mutated, ranktable.InjectOptions{ConfigMapName: "qwen-0-worker-0-ranktable", Template: tmpl}); err != nil {
		fmt.Println(err)
		return
	}
	ops, _ := webhookpatch.Diff(pod, mutated)
	for _, op := range ops {
		fmt.Println(op.Op, op.Path)
	}
	fmt.Println(mutated.Spec.Containers[0].Env[0].Name, "=", mutated.Spec.Containers[0].Env[0].Value)
	// Output:
	// add /metadata/annotations
	// add /spec/volumes
	// add /spec/initContainers
	// add /spec/containers/0/env
	// add /spec/containers/0/volumeMounts
	// RANKTABLEFILE = /etc/ascend/ranktable/ranktable.json
}
