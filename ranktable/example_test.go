// The package's examples, kept together in this file: each is complete
// and uses only the exported API, so it can be copied as shown. The file is long
// because every entry point has one.

package ranktable_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/webhookpatch"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The whole flow: a webhook makes each new pod of an owner wait for and mount its
// ranktable, and the controller plans the ranktable ConfigMaps from the owner, its pods
// and the template.
func Example() {
	// The template as a cluster holds it: a ranktable template ConfigMap and the pod
	// parser ConfigMap it names (both from the library here).
	rt, _ := ranktable.LibraryConfigMap(ranktable.LibraryMindIERole)
	parserCM, _ := ranktable.LibraryConfigMap(ranktable.ParserConfigMapName(rt))
	tmpl, err := ranktable.LoadTemplate(rt, parserCM, ranktable.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The owner can be any object; here a StatefulSet of two pods.
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "default", UID: "sts-uid"}}
	stsGVK := appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	yes := true
	newPod := func(i int) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("qwen-%d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("pod-uid-%d", i)),
				Labels: map[string]string{ranktable.LabelGroupName: "qwen-0", ranktable.LabelRole: "worker"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "qwen",
					UID: "sts-uid", Controller: &yes}},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "engine", Image: "mindie:1", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{"huawei.com/Ascend910": resource.MustParse("1")}}},
				{Name: "metrics", Image: "exporter:1"},
			}},
		}
	}

	// The mutating webhook, when a pod is created: name the pod's ConfigMap, inject
	// into the engine container (the one with NPUs), answer with the patch.
	pod := newPod(0)
	cmName, err := ranktable.PodConfigMapName(sts, tmpl, ranktable.Grouping{}, pod)
	if err != nil {
		fmt.Println(err)
		return
	}
	mutated := pod.DeepCopy()
	if _, err := ranktable.Inject(mutated, ranktable.InjectOptions{ConfigMapName: cmName, Template: tmpl}); err != nil {
		fmt.Println(err)
		return
	}
	ops, err := webhookpatch.Diff(pod, mutated)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("webhook patch for pod", pod.Name+":")
	for _, op := range ops {
		fmt.Println(" ", op.Op, op.Path)
	}

	// The device plugin annotates the pods with their NPUs; the controller plans.
	var pods []*corev1.Pod
	for i := range 2 {
		p := newPod(i)
		p.Annotations = map[string]string{ranktable.DefaultAnnotationName: fmt.Sprintf(
			`{"pod_name":"qwen-%d","server_id":"192.168.1.%d","devices":[{"device_id":"0","device_ip":"10.20.0.%d"}]}`, i, 10+i, 2+i)}
		pods = append(pods, p)
	}
	res, err := ranktable.Plan(ranktable.Input{
		Owner: ranktable.NewOwner(sts, stsGVK), Template: tmpl, Pods: pods,
		Expected: map[ranktable.GroupKey]int{{Group: "qwen-0", Role: "worker"}: 2},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range res.Groups {
		fmt.Println("group", g.Group, g.Phase, g.Pods, "of", g.Expected, "pods")
	}
	for _, d := range res.ConfigMaps {
		fmt.Println(d.Action, "ConfigMap", d.ConfigMap.Name, "with", strings.TrimSpace(d.ConfigMap.Data[tmpl.Filename]))
	}
	for _, e := range res.Events {
		fmt.Println("event", e.Reason, "on", e.Object.Kind, e.Object.Name)
	}
	// Output:
	// webhook patch for pod qwen-0:
	//   add /metadata/annotations
	//   add /spec/volumes
	//   add /spec/initContainers
	//   add /spec/containers/0/env
	//   add /spec/containers/0/volumeMounts
	// group qwen-0/worker Completed 2 of 2 pods
	// Create ConfigMap qwen-0-worker-ranktable with {
	//   "version": "1.0",
	//   "server_count": "2",
	//   "server_list": [
	//     {
	//       "server_id": "192.168.1.10",
	//       "device": [
	//         {
	//           "device_id": "0",
	//           "device_ip": "10.20.0.2",
	//           "rank_id": "0"
	//         }
	//       ]
	//     },
	//     {
	//       "server_id": "192.168.1.11",
	//       "device": [
	//         {
	//           "device_id": "0",
	//           "device_ip": "10.20.0.3",
	//           "rank_id": "1"
	//         }
	//       ]
	//     }
	//   ],
	//   "status": "completed"
	// }
	// event RanktableConfigMapCreated on ConfigMap qwen-0-worker-ranktable
	// event RanktableGenerated on ConfigMap qwen-0-worker-ranktable
}

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
	// ranktable template ConfigMap kthena-system/my-template: data[ranktable-template]: template: kthena-system/my-template:1:46: function "env" is not available: it reads the environment (and would copy controller secrets into ConfigMaps)
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
		fmt.Println(e.Reason, e.Object.Kind, e.Object.Namespace+"/"+e.Object.Name)
	}
	// Output:
	// qwen-0/worker-0 qwen-0-worker-0-ranktable Waiting [default/qwen-0-worker-0-1]
	// Create 5s
	// Completed Update 460 bytes
	// RanktableGenerated ConfigMap default/qwen-0-worker-0-ranktable
}

// Inject mounts the table in the engine container, the one that requests NPUs, and
// reports what it added. It applies everything or nothing: a pod whose engine already
// sets the env var differently is left exactly as it was.
func ExampleInject() {
	tmpl, _ := ranktable.LoadLibraryTemplate(ranktable.LibraryMindIERole, ranktable.LoadOptions{})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen-0-worker-0-0", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "metrics", Image: "exporter"},
			{Name: "engine", Image: "mindie", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"huawei.com/Ascend910": resource.MustParse("8")}}},
		}},
	}
	opts := ranktable.InjectOptions{ConfigMapName: "qwen-0-worker-0-ranktable", Template: tmpl}
	mutated := pod.DeepCopy()
	res, err := ranktable.Inject(mutated, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Changed, res.Items)
	ops, _ := webhookpatch.Diff(pod, mutated)
	for _, op := range ops {
		fmt.Println(op.Op, op.Path)
	}
	fmt.Println(mutated.Spec.Containers[1].Env[0].Name, "=", mutated.Spec.Containers[1].Env[0].Value)

	mine := pod.DeepCopy()
	mine.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "RANKTABLEFILE", Value: "/mine.json"}}
	before := mine.DeepCopy()
	_, err = ranktable.Inject(mine, opts)
	fmt.Println(errors.Is(err, webhookpatch.ErrConflict), equality.Semantic.DeepEqual(before, mine))
	// Output:
	// true [env/engine/RANKTABLEFILE initContainer/wait-ranktable mount/engine//etc/ascend/ranktable volume/ranktable]
	// add /metadata/annotations
	// add /spec/volumes
	// add /spec/initContainers
	// add /spec/containers/1/env
	// add /spec/containers/1/volumeMounts
	// RANKTABLEFILE = /etc/ascend/ranktable/ranktable.json
	// true true
}

// A webhook names the ConfigMap a new pod mounts in one call, before the owner has
// been planned: the level (the owner's annotation, else the template's), the pod's
// group labels and the owner's name make the name. A pod without the labels its
// group needs is an error, not a table of its own.
func ExamplePodConfigMapName() {
	tmpl, err := ranktable.LoadLibraryTemplate(ranktable.LibraryMindIERole, ranktable.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	owner := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "default"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "qwen-0-prefill-1-0", Namespace: "default", Labels: map[string]string{
		ranktable.LabelGroupName: "qwen-0", ranktable.LabelRole: "prefill", ranktable.LabelRoleID: "prefill-1"}}}
	fmt.Println(ranktable.PodConfigMapName(owner, tmpl, ranktable.Grouping{}, pod))

	owner.Annotations = map[string]string{ranktable.AnnotationLevel: "group"}
	fmt.Println(ranktable.PodConfigMapName(owner, tmpl, ranktable.Grouping{}, pod))

	delete(pod.Labels, ranktable.LabelGroupName)
	fmt.Println(ranktable.PodConfigMapName(owner, tmpl, ranktable.Grouping{}, pod))
	fmt.Println(ranktable.PodConfigMapName(owner, tmpl, ranktable.Grouping{SingleGroup: true}, pod))
	// Output:
	// qwen-0-prefill-1-ranktable <nil>
	// qwen-0-ranktable <nil>
	//  pod default/qwen-0-prefill-1-0: has no (or an empty) label modelserving.volcano.sh/group-name (its serving group)
	// qwen-ranktable <nil>
}

// A Planner kept between reconciles re-parses only the pod whose annotation changed
// and re-renders only its group; the other group's ConfigMap is left alone.
func ExamplePlanner() {
	tmpl, _ := ranktable.LoadLibraryTemplate(ranktable.LibraryVLLMGroup, ranktable.LoadOptions{})
	owner := ranktable.Owner{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "default", UID: "ms-uid"},
		GVK:        schema.GroupVersionKind{Group: "workload.kthena.io", Version: "v1alpha1", Kind: "ModelServing"},
	}
	yes := true
	pod := func(group, name, server, ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels:          map[string]string{ranktable.LabelGroupName: group},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "workload.kthena.io/v1alpha1", Kind: "ModelServing", Name: "qwen", UID: "ms-uid", Controller: &yes}},
			Annotations: map[string]string{ranktable.DefaultAnnotationName: `{"server_id":"` + server +
				`","devices":[{"device_id":"0","device_ip":"` + ip + `"}]}`},
		}}
	}
	in := ranktable.Input{Owner: owner, Template: tmpl, Now: time.Unix(0, 0), Pods: []*corev1.Pod{
		pod("qwen-0", "qwen-0-a", "192.168.1.10", "10.0.0.1"),
		pod("qwen-1", "qwen-1-a", "192.168.1.11", "10.0.1.1"),
	}}
	planner := ranktable.NewPlanner()
	res, _ := planner.Plan(in)
	for _, d := range res.ConfigMaps {
		d.ConfigMap.ResourceVersion = "1" // as if created by the API server
		in.ConfigMaps = append(in.ConfigMaps, d.ConfigMap)
	}

	in.Pods[1] = pod("qwen-1", "qwen-1-a", "192.168.1.11", "10.0.1.2") // a new device IP
	res, _ = planner.Plan(in)
	for _, d := range res.ConfigMaps {
		fmt.Println(d.ConfigMap.Name, d.Action)
	}
	// Output:
	// qwen-0-ranktable None
	// qwen-1-ranktable Update
}

// The Ascend device plugin's annotation is decoded by a built-in parser: no parser
// template needed.
func ExampleTemplate_ParseAnnotation() {
	rt, _ := ranktable.LibraryConfigMap(ranktable.LibraryHCCLv12)
	rt.Data["pod-parser-template"] = ranktable.BuiltinAscendDevicePlugin
	tmpl, err := ranktable.LoadTemplate(rt, nil, ranktable.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tmpl.AnnotationName)
	d, err := tmpl.ParseAnnotation(`{"pod_name":"qwen-0","server_id":"192.168.1.10","host_ip":"192.168.1.10","super_pod_id":0,` +
		`"devices":[{"device_id":"0","device_ip":"10.20.0.2","super_device_id":37748736}]}`)
	fmt.Println(d.ServerID, d.SuperPodID, d.Devices[0].ID, d.Devices[0].IP, d.Devices[0].SuperDeviceID, err)
	_, err = tmpl.ParseAnnotation(`{"server_id":"192.168.1.10","devices":[{"device_id":"0","device_ip":"-1"}]}`)
	fmt.Println(err)
	// Output:
	// ascend.kubectl.kubernetes.io/ascend-910-configuration
	// 192.168.1.10 0 0 10.20.0.2 37748736 <nil>
	// annotation ascend.kubectl.kubernetes.io/ascend-910-configuration: devices[0].device_ip: "-1" is not an IP address
}

// The library ConfigMaps can be applied as they are (kubectl apply) or loaded by name.
func ExampleLibraryConfigMaps() {
	for _, cm := range ranktable.LibraryConfigMaps() {
		fmt.Println(strings.TrimSpace(cm.Namespace + " " + cm.Name + " " + cm.Data["inference-engine"] + " " + cm.Data["ranktable-level"]))
	}
	// Output:
	// kthena-system ascend-pod-ranktable-parser-standard
	// kthena-system ascend-ranktable-template-hccl-v1.2 mindie role
	// kthena-system ascend-ranktable-template-mindie-extended mindie role
	// kthena-system ascend-ranktable-template-mindie-role mindie role
	// kthena-system ascend-ranktable-template-mindie-simple mindie role
	// kthena-system ascend-ranktable-template-vllm-group vllm-ascend group
	// kthena-system ascend-ranktable-template-vllm-pd vllm-ascend group
}

// A TemplateCache parses a template ConfigMap once per resourceVersion.
func ExampleTemplateCache() {
	var cache ranktable.TemplateCache
	rt, _ := ranktable.LibraryConfigMap(ranktable.LibraryMindIERole)
	rt.Data["pod-parser-template"] = ranktable.BuiltinRanktableJSON
	rt.UID, rt.ResourceVersion = "rt-uid", "1"
	a, err := cache.Load(rt, nil, ranktable.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := cache.Load(rt, nil, ranktable.LoadOptions{})
	rt.ResourceVersion = "2"
	c, _ := cache.Load(rt, nil, ranktable.LoadOptions{})
	fmt.Println(a == b, a == c)
	// Output:
	// true false
}

func ExampleConfigMapName() {
	fmt.Println(ranktable.ConfigMapName("qwen", ranktable.GroupKey{Group: "qwen-3", Role: "decode-1"}))
	fmt.Println(ranktable.ConfigMapName("qwen", ranktable.GroupKey{Group: "qwen-3"}))
	// Output:
	// qwen-3-decode-1-ranktable
	// qwen-3-ranktable
}

// Library templates load by name, with the parser they name; no ConfigMaps needed.
func ExampleLoadLibraryTemplate() {
	t, err := ranktable.LoadLibraryTemplate("ascend-ranktable-template-vllm-group", ranktable.LoadOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Engine, t.Level, t.ParserName, t.MountPath+"/"+t.Filename)
	_, err = ranktable.LoadLibraryTemplate("no-such-template", ranktable.LoadOptions{})
	fmt.Println(err != nil)
	// Output:
	// vllm-ascend group ascend-pod-ranktable-parser-standard /etc/ascend/ranktable/ranktable.json
	// true
}

// LibraryConfigMap returns a copy to create in the templates namespace.
func ExampleLibraryConfigMap() {
	cm, ok := ranktable.LibraryConfigMap("ascend-ranktable-template-mindie-role")
	fmt.Println(ok, cm.Name, cm.Data["inference-engine"], cm.Data["pod-parser-template"])
	// Output: true ascend-ranktable-template-mindie-role mindie ascend-pod-ranktable-parser-standard
}

// A pod's group key: its serving group, and at role level its role replica. A pod
// without the labels the level needs has no key.
func ExampleKeyOf() {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "qwen-0-prefill-1-0", Namespace: "default", Labels: map[string]string{
		ranktable.LabelGroupName: "qwen-0", ranktable.LabelRole: "prefill", ranktable.LabelRoleID: "prefill-1"}}}
	fmt.Println(ranktable.KeyOf(pod, ranktable.LevelGroup, ranktable.Grouping{}))
	fmt.Println(ranktable.KeyOf(pod, ranktable.LevelRole, ranktable.Grouping{}))
	pod.Labels = map[string]string{ranktable.LabelGroupName: "qwen-0"}
	_, err := ranktable.KeyOf(pod, ranktable.LevelRole, ranktable.Grouping{})
	fmt.Println(err)
	// Output:
	// qwen-0 <nil>
	// qwen-0/prefill-1 <nil>
	// pod default/qwen-0-prefill-1-0: has no (or an empty) label modelserving.volcano.sh/role-id or modelserving.volcano.sh/role (its role, needed at role level)
}

func ExampleParseLevel() {
	for _, s := range []string{"role", "group", "node"} {
		l, err := ranktable.ParseLevel(s)
		fmt.Println(l, err != nil)
	}
	// Output:
	// role false
	// group false
	//  true
}

// Render runs the template on a built table.
func ExampleTemplate_Render() {
	t, _ := ranktable.LoadLibraryTemplate("ascend-ranktable-template-mindie-simple", ranktable.LoadOptions{})
	table, _ := ranktable.Build([]ranktable.Member{{Pod: "default/qwen-0", RankIndex: -1, Data: ranktable.PodData{
		ServerID: "192.168.1.9", Devices: []ranktable.Device{{ID: "0", IP: "10.0.0.1"}, {ID: "1", IP: "10.0.0.2"}}}}}, ranktable.BuildOptions{})
	out, err := t.Render(table, ranktable.RenderOptions{})
	fmt.Println(strings.Count(string(out), `"rank_id"`), err)
	// Output: 2 <nil>
}

// kthena finds a ModelServing's pods by label, not by ownerReference: with
// Grouping.OwnerLabel such pods are grouped, and pods of other owners are listed in
// Result.Unmatched with why. Expected members with no pod are named in Absent.
func ExamplePlan_ownerLabel() {
	tmpl, err := ranktable.LoadLibraryTemplate(ranktable.LibraryMindIERole, ranktable.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	owner := ranktable.Owner{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "default", UID: "ms-uid"},
		GVK:        schema.GroupVersionKind{Group: "workload.kthena.io", Version: "v1alpha1", Kind: "ModelServing"},
	}
	pod := func(ms, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels:      map[string]string{ranktable.LabelModelServingName: ms, ranktable.LabelGroupName: ms + "-0", ranktable.LabelRoleID: "worker-0"},
			Annotations: map[string]string{ranktable.DefaultAnnotationName: `{"server_id":"192.168.1.10","devices":[{"device_id":"0","device_ip":"10.20.0.2"}]}`},
		}}
	}
	in := ranktable.Input{
		Owner: owner, Template: tmpl, Now: time.Unix(0, 0),
		Pods:     []*corev1.Pod{pod("qwen", "qwen-0-worker-0-0"), pod("llama", "llama-0-worker-0-0")},
		Expected: map[ranktable.GroupKey]int{{Group: "qwen-0", Role: "worker-0"}: 2},
		Grouping: ranktable.Grouping{OwnerLabel: ranktable.LabelModelServingName},
	}
	res, _ := ranktable.Plan(in)
	for _, g := range res.Groups {
		fmt.Println(g.Group, g.Phase, g.Pods, "of", g.Expected, "absent:", g.Absent)
	}
	for _, u := range res.Unmatched {
		fmt.Println(u.Reason+":", u.Message)
	}
	// Output:
	// qwen-0/worker-0 Waiting 1 of 2 absent: [default/qwen-0-worker-0-1]
	// PodNotOwned: pod default/llama-0-worker-0-0 has no controller ownerReference and its label modelserving.volcano.sh/name is "llama", not "qwen"
}

// A template that would loop for minutes stops at its work limit with an error naming
// the template and the limit; the budget is set per template when it is loaded.
func ExampleLoadOptions_budget() {
	rt := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "kthena-system"},
		Data: map[string]string{
			"inference-engine":    "mindie",
			"ranktable-level":     "role",
			"pod-parser-template": ranktable.BuiltinRanktableJSON,
			"ranktable-template":  `{{ range 100000 }}{{ range 100000 }}{{ end }}{{ end }}{}`,
		},
	}
	t, _ := ranktable.LoadTemplate(rt, nil, ranktable.LoadOptions{MaxTemplateWork: 1_000_000})
	table, _ := ranktable.Build([]ranktable.Member{{Pod: "default/qwen-0", RankIndex: -1, Data: ranktable.PodData{
		ServerID: "192.168.1.9", Devices: []ranktable.Device{{ID: "0", IP: "10.0.0.1"}}}}}, ranktable.BuildOptions{})
	_, err := t.Render(table, ranktable.RenderOptions{})
	fmt.Println(errors.Is(err, ranktable.ErrBudgetExceeded))
	fmt.Println(err)
	// Output:
	// true
	// ranktable template kthena-system/slow: template: kthena-system/slow:1:27: executing "kthena-system/slow" at <range>: range over 100000 elements: the work limit of 1000000 units is exceeded (MaxTemplateWork): template budget exceeded
}

// The level comes from the template unless the owner's annotation overrides it.
func ExampleResolveLevel() {
	tmpl, err := ranktable.LoadLibraryTemplate(ranktable.LibraryMindIERole, ranktable.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "default"}}
	for _, ann := range []map[string]string{nil, {ranktable.AnnotationLevel: "group"}, {ranktable.AnnotationLevel: "node"}} {
		sts.Annotations = ann
		fmt.Println(ranktable.ResolveLevel(sts, tmpl))
	}
	// Output:
	// role <nil>
	// group <nil>
	//  owner default/qwen: annotation kthena.io/ranktable-level: "node" is not a ranktable level (want role or group)
}

// With Expected set the plan knows every group, so the owner's ranktable ConfigMap of
// a group no longer expected (a serving group scaled away) is deleted. Each group's
// Reason and Message go into a condition as they are.
func ExamplePlan_deleteRemovedGroup() {
	tmpl, err := ranktable.LoadLibraryTemplate(ranktable.LibraryVLLMGroup, ranktable.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	owner := ranktable.Owner{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "default", UID: "ms-uid"},
		GVK:        schema.GroupVersionKind{Group: "workload.kthena.io", Version: "v1alpha1", Kind: "ModelServing"},
	}
	in := ranktable.Input{Owner: owner, Template: tmpl, Now: time.Unix(0, 0),
		Expected: map[ranktable.GroupKey]int{{Group: "qwen-0"}: 1, {Group: "qwen-1"}: 1}}
	res, err := ranktable.Plan(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range res.ConfigMaps {
		in.ConfigMaps = append(in.ConfigMaps, d.ConfigMap) // as created
	}

	in.Expected = map[ranktable.GroupKey]int{{Group: "qwen-0"}: 1} // scaled to one serving group
	res, _ = ranktable.Plan(in)
	for _, d := range res.ConfigMaps {
		fmt.Println(d.Action, d.ConfigMap.Name)
	}
	for _, g := range res.Groups {
		c := metav1.Condition{Type: "RanktableReady", Status: metav1.ConditionFalse, Reason: string(g.Reason), Message: g.Message}
		fmt.Println(c.Reason+":", c.Message)
	}
	// Output:
	// None qwen-0-ranktable
	// Delete qwen-1-ranktable
	// WaitingForPods: group qwen-0: waiting for pods: 0 of 1 exist
}

// A ranktable template ConfigMap names the parser ConfigMap LoadTemplate needs beside
// it, unless it uses a built-in parser.
func ExampleParserConfigMapName() {
	rt, _ := ranktable.LibraryConfigMap(ranktable.LibraryMindIERole)
	fmt.Printf("%q\n", ranktable.ParserConfigMapName(rt))
	rt.Data[ranktable.KeyPodParserTemplate] = ranktable.BuiltinAscendDevicePlugin
	fmt.Printf("%q\n", ranktable.ParserConfigMapName(rt))
	// Output:
	// "ascend-pod-ranktable-parser-standard"
	// ""
}
