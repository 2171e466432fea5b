package revision_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplan-dev/kplan/revision"
	"github.com/kplan-dev/kplan/webhookpatch"
)

// The main flow of a ConfigMapSet controller, end to end: the first reconcile
// creates the hub and gives every pod revision A; the node side confirms it. Then
// spec.data changes with partition 50%: the hub gains revision B, two of the four
// pods are selected for it (in name order), and once the node side confirms B on
// them the status counts two updated pods, A still current, and the rollout is
// complete as far as the partition allows: the other two pods wait for it.
func Example() {
	now := time.Date(2025, 2, 14, 17, 51, 48, 0, time.UTC)
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "deploy-cms1", Generation: 1},
		Spec: revision.ConfigMapSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"}},
			Data:       map[string]string{"settings.yaml": "value: aaa"},
			Containers: []revision.ContainerInjectSpec{{Name: "main", MountPath: "/data/conf1"}},
		},
	}
	keys, err := revision.KeysFor(set.Name)
	if err != nil {
		panic(err)
	}
	var pods []*corev1.Pod
	for _, name := range []string{"sample-a", "sample-b", "sample-c", "sample-d"} {
		// Pods as the webhook (Inject) left them: with the reload sidecar.
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name},
			Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: revision.ReloadSidecarName(set.Name)}}}})
	}
	// reconcile plans, applies the pod patches as the API server would, and plays
	// the node side: every patched pod loads its revision and is ready.
	var hub *corev1.ConfigMap
	reconcile := func(at time.Time) revision.Result {
		res, err := revision.Plan(revision.Input{Set: set, Hub: hub, Pods: pods, Now: at})
		if err != nil {
			panic(err)
		}
		// The reconciler creates or updates the hub as res.Hub.Action says
		// (nothing for kplan.ActionNone), and reads it back next time.
		hub = res.Hub.ConfigMap
		set.Status = res.Status
		for _, patch := range res.Pods {
			for i, p := range pods {
				if p.Name == patch.Name {
					p = patch.Apply(p)
					p.Annotations[keys.CurrentRevision] = p.Annotations[keys.UpdateRevision]
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
					pods[i] = p
				}
			}
		}
		return res
	}

	res := reconcile(now)
	fmt.Println(res.Hub.Action, "hub", hub.Name, "revisions", res.Revisions, "patched", len(res.Pods), "pods")
	res = reconcile(now)
	fmt.Println("current", res.Status.CurrentRevision, "complete", res.Complete)

	// New data, half the pods kept on the current revision.
	set.Generation++
	set.Spec.Data = map[string]string{"settings.yaml": "value: bbb"}
	half := intstr.FromString("50%")
	set.Spec.UpdateStrategy.Partition = &half
	res = reconcile(now.Add(time.Minute))
	fmt.Println("hub revisions", res.Revisions)
	for _, p := range res.Pods {
		fmt.Println(p.Name, "->", *p.Annotations[keys.UpdateRevision])
	}
	res = reconcile(now.Add(2 * time.Minute))
	st := res.Status
	fmt.Printf("status: current %s, update %s, matched %d, updated %d, updated and ready %d\n",
		st.CurrentRevision, st.UpdateRevision, st.MatchedPods, st.UpdatedPods, st.UpdatedReadyPods)
	fmt.Println("complete", res.Complete)
	for _, w := range res.Waiting {
		fmt.Println(w.Name, w.Reason)
	}
	// Output:
	// Create hub deploy-cms1-hub revisions [1b5d3bd378ca7b6c] patched 4 pods
	// current 1b5d3bd378ca7b6c complete true
	// hub revisions [1b5d3bd378ca7b6c f4c16993a53f5b40]
	// sample-a -> f4c16993a53f5b40
	// sample-b -> f4c16993a53f5b40
	// status: current 1b5d3bd378ca7b6c, update f4c16993a53f5b40, matched 4, updated 2, updated and ready 2
	// complete true
	// sample-c Partitioned
	// sample-d Partitioned
}

// Plan leaves cold pods alone and lists them with the reason: here one pod the
// webhook never injected and one created before spec.containers last changed.
func ExamplePlan_coldPods() {
	now := time.Date(2025, 2, 14, 17, 51, 48, 0, time.UTC)
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "deploy-cms1", Generation: 2},
		Spec: revision.ConfigMapSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"}},
			Data:       map[string]string{"settings.yaml": "value: aaa"},
			Containers: []revision.ContainerInjectSpec{{Name: "main", MountPath: "/data/conf1"}},
		},
	}
	sidecar := []corev1.Container{{Name: revision.ReloadSidecarName(set.Name)}}
	// spec.containers changed at 17:30, on the previous reconcile.
	first, _ := revision.Plan(revision.Input{Set: set, Now: now})
	changed := metav1.NewTime(time.Date(2025, 2, 14, 17, 30, 0, 0, time.UTC))
	set.Status.LastContainersHash = first.Status.LastContainersHash
	set.Status.LastContainersTimestamp = &changed
	pod := func(name string, created time.Time, init []corev1.Container) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, CreationTimestamp: metav1.NewTime(created)},
			Spec: corev1.PodSpec{InitContainers: init}}
	}
	pods := []*corev1.Pod{
		pod("sample-c", now, sidecar),                 // injected after the change: warm
		pod("sample-b", changed.Add(-time.Hour), nil), // no reload sidecar
		pod("sample-a", changed.Add(-time.Hour), sidecar),
	}
	res, err := revision.Plan(revision.Input{Set: set, Pods: pods, Now: now})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range res.Pods {
		fmt.Println("patched:", p.Name)
	}
	for _, c := range res.Cold {
		fmt.Printf("cold: %s %s: %s\n", c.Name, c.Reason, c.Message)
	}
	// Output:
	// patched: sample-c
	// cold: sample-a CreatedBeforeContainersChange: created 2025-02-14T16:30:00Z, before status.lastContainersTimestamp 2025-02-14T17:30:00Z (lacks the current mounts)
	// cold: sample-b NotInjected: not injected (no reload sidecar cms-reload-deploy-cms1)
}

// Result.Waiting says why each pod that is not current waits, with reasons a
// reconciler puts in a condition as they are. Here maxUnavailable 1 lets one pod
// restart into the new revision at a time, so the others wait for the budget.
func ExamplePlan_waiting() {
	now := time.Date(2025, 2, 14, 17, 51, 48, 0, time.UTC)
	one := intstr.FromInt32(1)
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "deploy-cms1", Generation: 3},
		Spec: revision.ConfigMapSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"}},
			Data:           map[string]string{"settings.yaml": "value: ccc"},
			Containers:     []revision.ContainerInjectSpec{{Name: "main", MountPath: "/data/conf1"}},
			UpdateStrategy: revision.ConfigMapSetUpdateStrategy{RestartInjectedContainers: true, MaxUnavailable: &one},
		},
	}
	// The hub holds the previous data, which every pod runs, ready.
	added, _ := revision.Hub{}.Add(map[string]string{"settings.yaml": "value: bbb"}, 0)
	hub, _ := added.Hub.HubConfigMap("demo", set.Name, nil)
	set.Status.CurrentRevision = added.Name
	keys, _ := revision.KeysFor(set.Name)
	var pods []*corev1.Pod
	for _, name := range []string{"sample-a", "sample-b", "sample-c"} {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name,
				Annotations: map[string]string{keys.UpdateRevision: added.Name, keys.CurrentRevision: added.Name}},
			Spec:   corev1.PodSpec{InitContainers: []corev1.Container{{Name: revision.ReloadSidecarName(set.Name)}}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	res, err := revision.Plan(revision.Input{Set: set, Hub: hub, Pods: pods, Now: now})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("complete:", res.Complete)
	for _, w := range res.Waiting {
		fmt.Printf("%s %s\n", w.Name, w.Reason)
	}
	// A condition straight from the plan: the first pod's reason and message.
	cond := metav1.Condition{Type: "Complete", Status: metav1.ConditionTrue, Reason: string(revision.ReasonRolloutComplete)}
	if !res.Complete {
		w := res.Waiting[0]
		cond.Status, cond.Reason = metav1.ConditionFalse, string(w.Reason)
		cond.Message = fmt.Sprintf("%d pods wait; %s: %s", len(res.Waiting), w.Name, w.Message)
	}
	fmt.Println(cond.Type, cond.Status, cond.Reason)
	// Output:
	// complete: false
	// sample-a RevisionNotConfirmed
	// sample-b MaxUnavailableReached
	// sample-c MaxUnavailableReached
	// Complete False RevisionNotConfirmed
}

func ExampleKeysFor() {
	k, _ := revision.KeysFor("deploy-cms1")
	fmt.Println(k.UpdateRevision)
	fmt.Println(k.CurrentRevisionTimestamp)
	fmt.Println(k.UpdateOrder)
	long, _ := revision.KeysFor("a-configmapset-with-a-rather-long-name")
	_, name, _ := strings.Cut(long.CurrentRevisionTimestamp, "/")
	fmt.Println(long.CurrentRevisionTimestamp, len(name)) // a key's name part holds at most 63
	// Output:
	// apps.kruise.io/configmapset.deploy-cms1.updateRevision
	// apps.kruise.io/configmapset.deploy-cms1.currentRevisionTimestamp
	// apps.kruise.io/configmapset.deploy-cms1.updateOrder
	// apps.kruise.io/configmapset.a-configmapset-w-cb396cc6.currentRevisionTimestamp 63
}

func ExampleInject() {
	half := intstr.FromString("50%") // half the pods stay on the current revision
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "deploy-cms1", Generation: 2},
		Spec: revision.ConfigMapSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"}},
			Data:           map[string]string{"settings.yaml": "value: aaa"},
			Containers:     []revision.ContainerInjectSpec{{Name: "main", MountPath: "/data/conf1"}},
			UpdateStrategy: revision.ConfigMapSetUpdateStrategy{Partition: &half},
		},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "sample-a", Labels: map[string]string{"app": "sample"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:1"}}},
	}
	res, err := revision.Inject(pod, revision.InjectInput{
		Set: set, KubeVersion: "v1.30.1", Sidecar: revision.SidecarOptions{Image: "reload:1"},
		Now: time.Date(2025, 2, 14, 17, 51, 48, 0, time.UTC),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Changed, pod.Spec.InitContainers[0].Name, *pod.Spec.InitContainers[0].RestartPolicy)
	fmt.Println(pod.Spec.Containers[0].VolumeMounts[0].MountPath, pod.Spec.Containers[0].VolumeMounts[0].ReadOnly)
	for _, item := range res.Items {
		fmt.Println(" ", item)
	}

	// A second set mounting into the same path conflicts half-way, after its volumes
	// and sidecar: the pod is left as the first injection made it.
	other := set.DeepCopy()
	other.Name = "deploy-cms2"
	before := pod.DeepCopy()
	_, err = revision.Inject(pod, revision.InjectInput{
		Set: other, KubeVersion: "v1.30.1", Sidecar: revision.SidecarOptions{Image: "reload:1"},
		Now: time.Date(2025, 2, 14, 17, 51, 48, 0, time.UTC),
	})
	fmt.Println(errors.Is(err, webhookpatch.ErrConflict), equality.Semantic.DeepEqual(before, pod))
	// Output:
	// true cms-reload-deploy-cms1 Always
	// /data/conf1 true
	//   annotation/apps.kruise.io/configmapset.deploy-cms1.updateRevision
	//   annotation/apps.kruise.io/configmapset.deploy-cms1.updateRevisionTimestamp
	//   initContainer/cms-reload-deploy-cms1
	//   mount/main//data/conf1
	//   volume/cms-deploy-cms1
	//   volume/cms-hub-deploy-cms1
	// true true
}

// With restartInjectedContainers and the default restartMethod (Signal), the pod
// shares one process namespace and each injected container carries its own name in
// EnvContainerName, so the reload sidecar can find its main process and signal it.
// With RestartExternal the pod keeps its own process namespaces.
func ExampleInject_restartBySignal() {
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "deploy-cms1"},
		Spec: revision.ConfigMapSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"}},
			Data:           map[string]string{"settings.yaml": "value: aaa"},
			Containers:     []revision.ContainerInjectSpec{{Name: "main", MountPath: "/data/conf1"}},
			UpdateStrategy: revision.ConfigMapSetUpdateStrategy{RestartInjectedContainers: true},
		},
	}
	for _, method := range []revision.RestartMethod{"", revision.RestartExternal} {
		set.Spec.UpdateStrategy.RestartMethod = method
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "sample-a", Labels: map[string]string{"app": "sample"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:1"}, {Name: "log", Image: "log:1"}}},
		}
		if _, err := revision.Inject(pod, revision.InjectInput{
			Set: set, KubeVersion: "v1.30.1", Sidecar: revision.SidecarOptions{Image: "reload:1"},
			Now: time.Date(2025, 2, 14, 17, 51, 48, 0, time.UTC),
		}); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("restartMethod %q: shareProcessNamespace %v\n", method, pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace)
		for _, c := range pod.Spec.Containers {
			for _, e := range c.Env {
				fmt.Printf("  container %s: %s=%s\n", c.Name, e.Name, e.Value)
			}
		}
	}

	// A pod that asks for its own process namespaces cannot be restarted by signal.
	no := false
	set.Spec.UpdateStrategy.RestartMethod = revision.RestartSignal
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "sample-b", Labels: map[string]string{"app": "sample"}},
		Spec:       corev1.PodSpec{ShareProcessNamespace: &no, Containers: []corev1.Container{{Name: "main", Image: "app:1"}}},
	}
	_, err := revision.Inject(pod, revision.InjectInput{
		Set: set, KubeVersion: "v1.30.1", Sidecar: revision.SidecarOptions{Image: "reload:1"},
		Now: time.Date(2025, 2, 14, 17, 51, 48, 0, time.UTC),
	})
	fmt.Println(errors.Is(err, webhookpatch.ErrConflict), len(pod.Spec.InitContainers))
	// Output:
	// restartMethod "": shareProcessNamespace true
	//   container main: CONFIGMAPSET_CONTAINER=main
	// restartMethod "External": shareProcessNamespace false
	// true 0
}

func ExampleHub_Files() {
	var hub revision.Hub
	r, _ := hub.Add(map[string]string{"settings.yaml": "value: aaa"}, 0)
	files, _ := r.Hub.Files(r.Name)
	fmt.Printf("%q\n", files["settings.yaml"])
	_, err := r.Hub.Files("0000000000000000")
	fmt.Println(err)
	// Output:
	// "value: aaa"
	// revision "0000000000000000" is not in the hub (it holds 1 revisions)
}

func ExampleMarkCurrent() {
	half := intstr.FromString("50%") // half the pods stay on the current revision
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "deploy-cms1", Generation: 2},
		Spec: revision.ConfigMapSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"}},
			Data:           map[string]string{"settings.yaml": "value: aaa"},
			Containers:     []revision.ContainerInjectSpec{{Name: "main", MountPath: "/data/conf1"}},
			UpdateStrategy: revision.ConfigMapSetUpdateStrategy{Partition: &half},
		},
	}
	keys, _ := revision.KeysFor(set.Name)
	wantedAt := time.Date(2025, 2, 14, 17, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "sample-a", Annotations: map[string]string{
			keys.UpdateRevision: "1b5d3bd378ca7b6c", keys.UpdateRevisionTimestamp: revision.FormatTimestamp(wantedAt),
		}},
		Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			InitContainerStatuses: []corev1.ContainerStatus{{
				Name:  revision.ReloadSidecarName(set.Name),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(wantedAt.Add(time.Minute))}},
			}},
		},
	}
	restarts, _ := revision.Restarts(pod, set)
	patch, ok, _ := revision.MarkCurrent(pod, set, wantedAt.Add(2*time.Minute))
	fmt.Println(restarts, ok, *patch.Annotations[keys.CurrentRevision])
	// Output:
	// [] true 1b5d3bd378ca7b6c
}

func ExampleRestarts() {
	half := intstr.FromString("50%") // half the pods stay on the current revision
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "deploy-cms1", Generation: 2},
		Spec: revision.ConfigMapSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"}},
			Data:           map[string]string{"settings.yaml": "value: aaa"},
			Containers:     []revision.ContainerInjectSpec{{Name: "main", MountPath: "/data/conf1"}},
			UpdateStrategy: revision.ConfigMapSetUpdateStrategy{Partition: &half},
		},
	}
	set.Spec.UpdateStrategy.RestartInjectedContainers = true
	keys, _ := revision.KeysFor(set.Name)
	wantedAt := time.Date(2025, 2, 14, 17, 0, 0, 0, time.UTC)
	running := func(at time.Time) corev1.ContainerState {
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}
	}
	sidecar := revision.ReloadSidecarName(set.Name)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "sample-a", Annotations: map[string]string{
			keys.UpdateRevision: "f4c16993a53f5b40", keys.UpdateRevisionTimestamp: revision.FormatTimestamp(wantedAt),
			keys.CurrentRevision: "1b5d3bd378ca7b6c",
		}},
		// As Inject left it: "main" mounts the set's volume.
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", VolumeMounts: []corev1.VolumeMount{
			{Name: revision.VolumeName(set.Name), MountPath: "/data/conf1", ReadOnly: true}}}}},
		Status: corev1.PodStatus{
			InitContainerStatuses: []corev1.ContainerStatus{{Name: sidecar, State: running(wantedAt.Add(-time.Hour))}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "main", State: running(wantedAt.Add(-time.Hour))}},
		},
	}
	// Both started before the revision was wanted: the reload sidecar goes first, alone.
	need, _ := revision.Restarts(pod, set)
	fmt.Println(need)
	// Once it has restarted, the containers that mount the files follow.
	pod.Status.InitContainerStatuses[0].State = running(wantedAt.Add(time.Second))
	need, _ = revision.Restarts(pod, set)
	fmt.Println(need)
	// Output:
	// [cms-reload-deploy-cms1]
	// [main]
}

func ExampleValidate() {
	half := intstr.FromString("50%") // half the pods stay on the current revision
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "deploy-cms1", Generation: 2},
		Spec: revision.ConfigMapSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"}},
			Data:           map[string]string{"settings.yaml": "value: aaa"},
			Containers:     []revision.ContainerInjectSpec{{Name: "main", MountPath: "/data/conf1"}},
			UpdateStrategy: revision.ConfigMapSetUpdateStrategy{Partition: &half},
		},
	}
	bad := intstr.FromString("120%")
	set.Spec.UpdateStrategy.Partition = &bad
	set.Spec.Containers = append(set.Spec.Containers, revision.ContainerInjectSpec{
		NameFrom:  &revision.ValueFromSource{FieldRef: corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		MountPath: "conf",
	})
	for _, err := range revision.Validate(set) {
		fmt.Println(err)
	}
	// Output:
	// spec.containers[1].nameFrom.fieldRef.fieldPath: Invalid value: "metadata.name": supported: metadata.labels['<key>'] and metadata.annotations['<key>']
	// spec.containers[1].mountPath: Invalid value: "conf": must be absolute
	// spec.updateStrategy.partition: Invalid value: "120%": must be between 0% and 100%
}

func ExampleResolvePartition() {
	for _, c := range []struct {
		partition string
		pods      int
	}{{"50%", 5}, {"99%", 10}, {"99%", 1}, {"0%", 10}} {
		p := intstr.FromString(c.partition)
		kept, _ := revision.ResolvePartition(&p, c.pods)
		fmt.Printf("%s of %d pods: %d kept, %d updated\n", c.partition, c.pods, kept, c.pods-kept)
	}
	// Output:
	// 50% of 5 pods: 3 kept, 2 updated
	// 99% of 10 pods: 9 kept, 1 updated
	// 99% of 1 pods: 1 kept, 0 updated
	// 0% of 10 pods: 0 kept, 10 updated
}

func ExampleDecodeHub() {
	var hub revision.Hub
	var names []string
	for _, v := range []string{"a", "b", "c", "a"} { // "a" again moves its revision to newest
		r, _ := hub.Add(map[string]string{"f": v}, 0)
		hub = r.Hub
		names = append(names, r.Name)
	}
	cm, _ := hub.HubConfigMap("demo", "deploy-cms1", nil)
	back, err := revision.DecodeHub(cm)
	fmt.Println(cm.Name, len(back.Revisions), err, back.Index(names[0]))
	// Keep no non-live revision; a's (the update) and b's (a pod still runs it) are live.
	trimmed, dropped := back.Trim(0, func(n string) bool { return n == names[1] || n == names[3] })
	fmt.Println(len(trimmed.Revisions), dropped[0] == names[2])
	cm.Data[revision.HubDataKey] = `{"name":"x"}`
	_, err = revision.DecodeHub(cm)
	fmt.Println(err != nil)
	// Output:
	// deploy-cms1-hub 3 <nil> 2
	// 2 true
	// true
}

func ExampleRevisionHash() {
	data := map[string]string{"settings.yaml": "value: aaa"}
	name := revision.RevisionHash(data, 0)
	// The same data gives the same revision, whatever the map's order; a collision
	// count (bumped when the hub holds the hash with other data) gives another.
	fmt.Println(len(name), name == revision.RevisionHash(map[string]string{"settings.yaml": "value: aaa"}, 0))
	fmt.Println(name == revision.RevisionHash(data, 1))
	// A key and value cannot be moved across the separator to collide.
	fmt.Println(revision.RevisionHash(map[string]string{"a": "bc"}, 0) == revision.RevisionHash(map[string]string{"ab": "c"}, 0))
	// Output:
	// 16 true
	// false
	// false
}

func ExampleKeys_Write() {
	keys, _ := revision.KeysFor("deploy-cms1")
	at := time.Date(2025, 2, 14, 17, 51, 48, 0, time.UTC)
	annotations := map[string]string{}
	keys.Write(annotations, revision.PodState{UpdateRevision: "1b5d3bd378ca7b6c", UpdateTimestamp: at})
	fmt.Println(annotations[keys.UpdateRevision], annotations[keys.UpdateRevisionTimestamp])

	// Read parses what Write wrote.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sample-a", Annotations: annotations}}
	st, err := keys.Read(pod)
	fmt.Println(st.UpdateRevision, st.UpdateTimestamp.Equal(at), st.CurrentRevision == "", st.Updated(), err)
	// Output:
	// 1b5d3bd378ca7b6c 1739555508000
	// 1b5d3bd378ca7b6c true true false <nil>
}

func ExampleKeys_Read() {
	keys, _ := revision.KeysFor("deploy-cms1")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "sample-a", Annotations: map[string]string{
		keys.UpdateRevision:           "1b5d3bd378ca7b6c",
		keys.UpdateRevisionTimestamp:  "1739555508000",
		keys.CurrentRevision:          "1b5d3bd378ca7b6c",
		keys.CurrentRevisionTimestamp: "yesterday",
	}}}
	_, err := keys.Read(pod)
	fmt.Println(err)
	// Output:
	// pod demo/sample-a: annotation apps.kruise.io/configmapset.deploy-cms1.currentRevisionTimestamp: "yesterday" is not a timestamp in milliseconds
}

func ExampleValidateSpec() {
	// An operator embedding ConfigMapSetSpec in its own CRD validates it at its path.
	half := intstr.FromString("50%")
	spec := revision.ConfigMapSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"}},
		Data:     map[string]string{"settings.yaml": "value: aaa"},
		Containers: []revision.ContainerInjectSpec{
			{Name: "main", MountPath: "/data/conf1"},
			{Name: "side", MountPath: "relative/path"},
		},
		UpdateStrategy: revision.ConfigMapSetUpdateStrategy{Partition: &half},
	}
	for _, e := range revision.ValidateSpec(&spec, field.NewPath("spec", "configuration")) {
		fmt.Println(e)
	}
	// Output:
	// spec.configuration.containers[1].mountPath: Invalid value: "relative/path": must be absolute
}
