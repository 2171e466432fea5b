package ranktable

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kplan-dev/kplan/internal/exact"
	"github.com/kplan-dev/kplan/internal/podfixture"
	"github.com/kplan-dev/kplan/webhookpatch"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"
)

// npu makes a container request (as a limit) n Ascend NPUs.
func npu(c corev1.Container, n string) corev1.Container {
	c.Resources.Limits = corev1.ResourceList{"huawei.com/Ascend910": resource.MustParse(n)}
	return c
}

// hasTable reports whether container c of pod mounts the table of t and has its env
// var.
func hasTable(pod *corev1.Pod, c string, t *Template) (mounted, env bool) {
	for _, ct := range pod.Spec.Containers {
		if ct.Name != c {
			continue
		}
		for _, m := range ct.VolumeMounts {
			mounted = mounted || (m.Name == VolumeName && m.ReadOnly && m.SubPath == "" && m.MountPath == t.MountPath)
		}
		for _, e := range ct.Env {
			env = env || (e.Name == t.Engine.EnvVar() && e.Value == t.MountPath+"/"+t.Filename)
		}
	}
	return mounted, env
}

func TestInject(t *testing.T) {
	for _, name := range []string{LibraryMindIERole, LibraryVLLMGroup} {
		tm := mustLibrary(t, name, LoadOptions{})
		t.Run("a "+string(tm.Engine)+" pod gets volume, wait container, and a read-only mount and env in its engine, idempotently", func(t *testing.T) {
			pod := podfixture.Pod("default", "qwen-0",
				podfixture.Container(npu(corev1.Container{Name: "engine", Image: "engine:1"}, "8")),
				podfixture.Containers("proxy"))
			orig := pod.DeepCopy()
			opts := InjectOptions{ConfigMapName: "qwen-0-worker-0-ranktable", Template: tm}
			res, err := Inject(pod, opts)
			if err != nil || !res.Changed {
				t.Fatalf("result %+v err %v", res, err)
			}
			wantItems := []string{"env/engine/" + tm.Engine.EnvVar(), "initContainer/" + InitContainerName,
				"mount/engine/" + tm.MountPath, "volume/" + VolumeName}
			if !slices.Equal(res.Items, wantItems) {
				t.Errorf("items %q, want %q", res.Items, wantItems)
			}
			if errs := webhookpatch.Validate(pod); len(errs) > 0 {
				t.Fatalf("invalid pod: %v", errs)
			}
			if v := pod.Spec.Volumes; len(v) != 1 || v[0].ConfigMap == nil || v[0].ConfigMap.Name != opts.ConfigMapName {
				t.Errorf("volumes %+v", v)
			}
			ic := pod.Spec.InitContainers
			if len(ic) != 1 || ic[0].Name != InitContainerName || !strings.Contains(ic[0].Command[2], "initializing") ||
				!strings.Contains(ic[0].Command[2], "/etc/ascend/ranktable/ranktable.json") || !strings.Contains(ic[0].Command[2], "sleep 2") {
				t.Fatalf("init containers %+v", ic)
			}
			sc := ic[0].SecurityContext
			if sc == nil || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation {
				t.Errorf("security context %+v", sc)
			}
			if mounted, env := hasTable(pod, "engine", tm); !mounted || !env {
				t.Errorf("engine: mounted %v env %v", mounted, env)
			}
			if proxy := pod.Spec.Containers[1]; len(proxy.VolumeMounts) != 0 || len(proxy.Env) != 0 {
				t.Errorf("the proxy sidecar got %+v and %+v", proxy.VolumeMounts, proxy.Env)
			}
			again := pod.DeepCopy()
			res, err = Inject(again, opts)
			if err != nil || res.Changed || len(res.Items) != 0 {
				t.Fatalf("second injection %+v err %v", res, err)
			}
			ops, err := webhookpatch.Diff(pod, again)
			if err != nil || len(ops) != 0 {
				t.Fatalf("second injection diff %v %v", ops, err)
			}
			ops, err = webhookpatch.Diff(orig, pod)
			if err != nil || len(ops) == 0 {
				t.Fatalf("no patch for the first injection: %v", err)
			}
			out, err := json.MarshalIndent(ops, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "inject-"+string(tm.Engine)+".patch.json", append(out, '\n'))
		})
	}
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	t.Run("a changed ConfigMap name updates the volume and names it in Items", func(t *testing.T) {
		pod := podfixture.Pod("default", "qwen-0", podfixture.Containers("engine"))
		if _, err := Inject(pod, InjectOptions{ConfigMapName: "a", Template: tm}); err != nil {
			t.Fatal(err)
		}
		res, err := Inject(pod, InjectOptions{ConfigMapName: "b", Template: tm})
		if err != nil || !res.Changed || !slices.Equal(res.Items, []string{"volume/ranktable"}) || pod.Spec.Volumes[0].ConfigMap.Name != "b" {
			t.Fatalf("result %+v err %v, volume %+v", res, err, pod.Spec.Volumes)
		}
	})
	t.Run("a selector other than the zero value is used as it is", func(t *testing.T) {
		pod := podfixture.Pod("default", "qwen-0", podfixture.Containers("engine", "proxy", "metrics"))
		sel := webhookpatch.ContainerSelector{Exclude: []string{"metrics"}}
		if _, err := Inject(pod, InjectOptions{ConfigMapName: "a", Template: tm, Containers: sel}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"engine", "proxy", "metrics"} {
			if mounted, env := hasTable(pod, c, tm); mounted != (c != "metrics") || env != (c != "metrics") {
				t.Errorf("container %s: mounted %v env %v", c, mounted, env)
			}
		}
	})
}

// On every error the pod is left exactly as it was, whichever step fails: the volume,
// the init container, or a mount or env var in the second selected container after
// the first was fine.
func TestInjectFailsWithoutChangingThePod(t *testing.T) {
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	two := func(opts ...podfixture.Option) *corev1.Pod {
		base := []podfixture.Option{
			podfixture.Container(npu(corev1.Container{Name: "engine-0", Image: "engine:1"}, "8")),
			podfixture.Container(npu(corev1.Container{Name: "engine-1", Image: "engine:1"}, "8")),
		}
		return podfixture.Pod("default", "qwen-0", append(base, opts...)...)
	}
	withSecond := func(f func(c *corev1.Container)) podfixture.Option {
		return func(p *corev1.Pod) { f(&p.Spec.Containers[1]) }
	}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		opts     InjectOptions
		conflict bool
		want     string
	}{
		{"a user volume named ranktable", two(podfixture.Volume(corev1.Volume{Name: VolumeName,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})), InjectOptions{}, true, "spec.volumes[ranktable]"},
		{"a user init container named wait-ranktable", two(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: InitContainerName, Image: "mine"}}
		}), InjectOptions{}, true, "spec.initContainers[wait-ranktable]"},
		{"the second engine already sets the env var", two(withSecond(func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{{Name: "RANKTABLEFILE", Value: "/mine.json"}}
		})), InjectOptions{}, true, "spec.containers[engine-1]: conflict: env var RANKTABLEFILE is already set differently"},
		{"the second engine already mounts something at the mount path", two(
			podfixture.Volume(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}),
			withSecond(func(c *corev1.Container) {
				c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/etc/ascend/ranktable"}}
			})), InjectOptions{}, true, `spec.containers[engine-1]: conflict: mountPath /etc/ascend/ranktable is already used by volume "data"`},
		{"a named container the pod does not have", two(), InjectOptions{Containers: webhookpatch.ContainerSelector{Names: []string{"engine-0", "engine-9"}}},
			false, `container "engine-9": no such container`},
		{"an unreadable record annotation", two(podfixture.Annotation(webhookpatch.RecordAnnotation, "{")), InjectOptions{}, false,
			"annotation kplan.dev/injected"},
		{"no template", two(), InjectOptions{Template: nil}, false, "inject: pod default/qwen-0: InjectOptions.Template is nil"},
		{"no ConfigMap name", two(), InjectOptions{ConfigMapName: "-"}, false,
			`inject: pod default/qwen-0: InjectOptions.ConfigMapName "" is not a valid ConfigMap name`},
		{"a ConfigMap name the API server rejects", two(), InjectOptions{ConfigMapName: "Qwen_0"}, false,
			`inject: pod default/qwen-0: InjectOptions.ConfigMapName "Qwen_0" is not a valid ConfigMap name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := c.opts
			switch opts.ConfigMapName {
			case "":
				opts.ConfigMapName = "qwen-0-worker-0-ranktable"
			case "-":
				opts.ConfigMapName = ""
			}
			if c.name != "no template" {
				opts.Template = tm
			}
			before := c.pod.DeepCopy()
			res, err := Inject(c.pod, opts)
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, webhookpatch.ErrConflict) != c.conflict {
				t.Fatalf("error %v, want one containing %q (conflict: %v)", err, c.want, c.conflict)
			}
			if diff := cmp.Diff(before, c.pod, exact.Options); diff != "" {
				t.Errorf("the pod changed (-before +after):\n%s", diff)
			}
			if res.Changed || len(res.Items) != 0 {
				t.Errorf("result %+v on error", res)
			}
		})
	}
	t.Run("a nil pod", func(t *testing.T) {
		if _, err := Inject(nil, InjectOptions{ConfigMapName: "x", Template: tm}); err == nil || err.Error() != "inject: pod is nil" {
			t.Fatalf("error %v", err)
		}
	})
}

// A sidecar another webhook put among the app containers (OpenKruise launch priority,
// before Kubernetes 1.29) gets neither the ranktable mount nor its env var, whichever
// webhook runs first, and injecting again changes nothing.
func TestInjectLeavesAnotherInjectorsSidecarAlone(t *testing.T) {
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	opts := InjectOptions{ConfigMapName: "qwen-0-worker-0-ranktable", Template: tm}
	reload := func(pod *corev1.Pod) {
		t.Helper()
		sidecar := corev1.Container{Name: "cms-reload", Image: "reload:v1"}
		if _, err := (webhookpatch.Injector{Name: "configmapset-cms"}).EnsureSidecar(pod, sidecar, webhookpatch.SidecarLaunchPriority); err != nil {
			t.Fatal(err)
		}
	}
	inject := func(pod *corev1.Pod) bool {
		t.Helper()
		res, err := Inject(pod, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res.Changed
	}
	for _, sidecarFirst := range []bool{true, false} {
		pod := podfixture.Pod("default", "qwen-0", podfixture.Containers("engine"))
		if sidecarFirst {
			reload(pod)
			inject(pod)
		} else {
			inject(pod)
			reload(pod)
		}
		if inject(pod) {
			t.Errorf("sidecar first %v: injecting again changed the pod", sidecarFirst)
		}
		for _, c := range pod.Spec.Containers {
			hasEnv := len(c.Env) == 1 && c.Env[0].Name == tm.Engine.EnvVar()
			hasMount := len(c.VolumeMounts) == 1 && c.VolumeMounts[0].Name == VolumeName
			if want := c.Name == "engine"; hasEnv != want || hasMount != want {
				t.Errorf("sidecar first %v: container %s has env %v and mounts %v; want the ranktable's: %v",
					sidecarFirst, c.Name, c.Env, c.VolumeMounts, want)
			}
		}
	}
}

func TestEngineContainers(t *testing.T) {
	c := func(name string) corev1.Container { return corev1.Container{Name: name, Image: "x"} }
	requests := func(ct corev1.Container, res corev1.ResourceName, n string) corev1.Container {
		ct.Resources.Requests = corev1.ResourceList{res: resource.MustParse(n)}
		return ct
	}
	pod := func(containers []corev1.Container, ann ...string) *corev1.Pod {
		p := podfixture.Pod("default", "p")
		p.Spec.Containers = containers
		for i := 0; i+1 < len(ann); i += 2 {
			podfixture.Annotation(ann[i], ann[i+1])(p)
		}
		return p
	}
	byReload := `{"configmapset-cms":{"container/cms-reload":"h"}}`
	cases := []struct {
		name string
		pod  *corev1.Pod
		want []string
		err  string
	}{
		{"the container with NPUs, not the sidecars around it", pod([]corev1.Container{c("metrics"), npu(c("engine"), "8"), c("proxy")}), []string{"engine"}, ""},
		{"every container with NPUs", pod([]corev1.Container{npu(c("prefill"), "4"), c("metrics"), npu(c("decode"), "4")}), []string{"prefill", "decode"}, ""},
		{"NPUs as a request", pod([]corev1.Container{c("metrics"), requests(c("engine"), "huawei.com/Ascend310P", "1")}), []string{"engine"}, ""},
		{"the design's resource name", pod([]corev1.Container{c("metrics"), requests(c("inference"), "ascend.com/npu", "8")}), []string{"inference"}, ""},
		{"zero NPUs are none", pod([]corev1.Container{c("engine"), npu(c("metrics"), "0")}), []string{"engine"}, ""},
		{"other accelerators are not NPUs", pod([]corev1.Container{c("engine"), requests(c("gpu"), "nvidia.com/gpu", "1")}), []string{"engine"}, ""},
		{"without NPUs the default-container annotation", pod([]corev1.Container{c("metrics"), c("engine")},
			"kubectl.kubernetes.io/default-container", "engine"), []string{"engine"}, ""},
		{"NPUs win over the annotation", pod([]corev1.Container{c("metrics"), npu(c("engine"), "8")},
			"kubectl.kubernetes.io/default-container", "metrics"), []string{"engine"}, ""},
		{"an annotation naming no container is ignored", pod([]corev1.Container{c("engine"), c("metrics")},
			"kubectl.kubernetes.io/default-container", "nope"), []string{"engine"}, ""},
		{"without NPUs or annotation the first container", pod([]corev1.Container{c("engine"), c("metrics")}), []string{"engine"}, ""},
		{"never a container another injector added", pod([]corev1.Container{c("cms-reload"), c("engine")},
			webhookpatch.RecordAnnotation, byReload), []string{"engine"}, ""},
		{"not even when the annotation names it", pod([]corev1.Container{c("cms-reload"), c("engine")},
			webhookpatch.RecordAnnotation, byReload, "kubectl.kubernetes.io/default-container", "cms-reload"), []string{"engine"}, ""},
		{"a container our own injector recorded is the user's", pod([]corev1.Container{c("engine")},
			webhookpatch.RecordAnnotation, `{"ranktable":{"container/engine":"h"}}`), []string{"engine"}, ""},
		{"none when every container is another injector's", pod([]corev1.Container{c("cms-reload")},
			webhookpatch.RecordAnnotation, byReload), nil, ""},
		{"none without containers", pod(nil), nil, ""},
		{"an unreadable record is an error", pod([]corev1.Container{c("engine")}, webhookpatch.RecordAnnotation, "["), nil,
			"pod default/p: annotation kplan.dev/injected: "},
		{"a nil pod is an error", nil, nil, "pod is nil"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EngineContainers(tc.pod)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("EngineContainers = %q, %v; want the error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("EngineContainers = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestIsNPUResource(t *testing.T) {
	for name, want := range map[corev1.ResourceName]bool{
		"huawei.com/Ascend910": true, "huawei.com/Ascend310P": true, "huawei.com/Ascend910-4c": true,
		"huawei.com/Ascend910B": true, "huawei.com/ascend-1980": true, "ascend.com/npu": true,
		"nvidia.com/gpu": false, "huawei.com/npu": false, "huawei.com/asc": false, "ascend.com/": false,
		"example.com/Ascend910": false, "cpu": false, "Ascend910": false, "huawei.com": false,
	} {
		t.Run(string(name), func(t *testing.T) {
			if got := IsNPUResource(name); got != want {
				t.Errorf("IsNPUResource(%q) = %v, want %v", name, got, want)
			}
		})
	}
}

// injectCases counts the property test's outcomes, so a run shows that both errors
// and successes were exercised.
var injectCases struct{ failed, injected, conflicts, halfway atomic.Int64 }

// TestInjectIsAllOrNothing: on arbitrary pods, some holding objects that conflict
// with any step (the volume, the init container, a mount or env var in any
// container, selected or not), Inject either succeeds (and a second Inject changes
// nothing) or fails leaving the pod deep-equal to what it was.
func TestInjectIsAllOrNothing(t *testing.T) {
	templates := []*Template{mustLibrary(t, LibraryMindIERole, LoadOptions{}), mustLibrary(t, LibraryVLLMGroup, LoadOptions{})}
	injectCases.failed.Store(0)
	injectCases.injected.Store(0)
	injectCases.conflicts.Store(0)
	injectCases.halfway.Store(0)
	rapid.Check(t, func(t *rapid.T) {
		tm := rapid.SampledFrom(templates).Draw(t, "template")
		pod := genInjectPod(t, tm)
		opts := InjectOptions{ConfigMapName: "qwen-0-worker-0-ranktable", Template: tm}
		if rare(t, "invalid ConfigMap name") {
			opts.ConfigMapName = rapid.SampledFrom([]string{"", "Bad_Name"}).Draw(t, "ConfigMap name")
		}
		switch rapid.IntRange(0, 3).Draw(t, "selector") {
		case 1:
			var have []string
			for _, c := range pod.Spec.Containers {
				have = append(have, c.Name)
			}
			names := rapid.SliceOfNDistinct(rapid.SampledFrom(have), 1, 3, rapid.ID[string]).Draw(t, "names")
			if rare(t, "name an absent container") {
				names = append(names, "absent")
			}
			opts.Containers = webhookpatch.ContainerSelector{Names: names}
		case 2:
			opts.Containers = webhookpatch.ContainerSelector{Exclude: []string{rapid.SampledFrom([]string{"engine", "metrics"}).Draw(t, "exclude")}}
		}
		before := pod.DeepCopy()
		res, err := Inject(pod, opts)
		if err != nil {
			injectCases.failed.Add(1)
			if errors.Is(err, webhookpatch.ErrConflict) {
				injectCases.conflicts.Add(1)
				if strings.Contains(err.Error(), "spec.containers[") {
					injectCases.halfway.Add(1) // the volume and init container were fine
				}
			}
			if diff := cmp.Diff(before, pod, exact.Options); diff != "" {
				t.Fatalf("Inject failed (%v) and changed the pod (-before +after):\n%s", err, diff)
			}
			if res.Changed || res.Items != nil {
				t.Fatalf("result %+v with the error %v", res, err)
			}
			return
		}
		injectCases.injected.Add(1)
		if res.Changed != !equality.Semantic.DeepEqual(before, pod) {
			t.Fatalf("Changed %v, but the pod changed: %v", res.Changed, !equality.Semantic.DeepEqual(before, pod))
		}
		if len(webhookpatch.Validate(before)) == 0 {
			if errs := webhookpatch.Validate(pod); len(errs) > 0 {
				t.Fatalf("a valid pod became invalid: %v", errs)
			}
		}
		selected := opts.Containers.Names
		if len(selected) == 0 && len(opts.Containers.Exclude) == 0 {
			selected, _ = EngineContainers(before)
		}
		for _, c := range selected {
			if mounted, env := hasTable(pod, c, tm); !mounted || !env {
				t.Fatalf("selected container %s: mounted %v env %v", c, mounted, env)
			}
		}
		after := pod.DeepCopy()
		res, err = Inject(pod, opts)
		if err != nil || res.Changed || len(res.Items) != 0 {
			t.Fatalf("injecting again: %+v, %v", res, err)
		}
		if diff := cmp.Diff(after, pod, exact.Options); diff != "" {
			t.Fatalf("injecting again changed the pod (-before +after):\n%s", diff)
		}
	})
	t.Logf("%d injected, %d failed (%d conflicts, %d of them in a container after the volume and init container were added)",
		injectCases.injected.Load(), injectCases.failed.Load(), injectCases.conflicts.Load(), injectCases.halfway.Load())
	if injectCases.injected.Load() == 0 || injectCases.halfway.Load() == 0 {
		t.Errorf("the generator made %d successes and %d conflicts half-way; it must make both", injectCases.injected.Load(), injectCases.halfway.Load())
	}
}

// rare draws true about one time in twenty (rapid favours the ends of a range, so
// the value tested is in the middle).
func rare(t *rapid.T, label string) bool { return rapid.IntRange(0, 19).Draw(t, label) == 10 }

// genInjectPod draws a pod of 1..4 app containers, some with NPUs, some holding what
// Inject would add (as Inject adds it, or conflicting), perhaps another injector's
// sidecar and a default-container annotation.
func genInjectPod(t *rapid.T, tm *Template) *corev1.Pod {
	names := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"engine", "proxy", "metrics", "worker"}), 1, 4, rapid.ID[string]).Draw(t, "containers")
	pod := podfixture.Pod("default", "qwen-0")
	for _, n := range names {
		c := corev1.Container{Name: n, Image: n + ":1"}
		if rapid.IntRange(0, 2).Draw(t, "npu "+n) == 0 {
			c = npu(c, "8")
		}
		switch rapid.IntRange(0, 9).Draw(t, "env "+n) {
		case 3: // conflicts
			c.Env = []corev1.EnvVar{{Name: tm.Engine.EnvVar(), Value: "/somewhere/else.json"}}
		case 4: // as Inject would set it: left alone
			c.Env = []corev1.EnvVar{{Name: tm.Engine.EnvVar(), Value: tm.MountPath + "/" + tm.Filename}}
		case 5:
			c.Env = []corev1.EnvVar{{Name: "OTHER", Value: "1"}}
		}
		switch rapid.IntRange(0, 9).Draw(t, "mount "+n) {
		case 3: // conflicts
			c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: tm.MountPath}}
		case 4:
			c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	if rare(t, "user volume") {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: VolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if rare(t, "user init container") {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: InitContainerName, Image: "mine:1"})
	}
	switch rapid.IntRange(0, 9).Draw(t, "record") {
	case 3, 4:
		pod.Spec.Containers = slices.Insert(pod.Spec.Containers, 0, corev1.Container{Name: "cms-reload", Image: "reload:1",
			Env: []corev1.EnvVar{{Name: tm.Engine.EnvVar(), Value: "theirs"}}})
		podfixture.Annotation(webhookpatch.RecordAnnotation, `{"configmapset-cms":{"container/cms-reload":"h"}}`)(pod)
	case 5:
		podfixture.Annotation(webhookpatch.RecordAnnotation, "{not json")(pod)
	}
	if rapid.IntRange(0, 3).Draw(t, "default container") == 0 {
		podfixture.Annotation(annotationDefaultContainer, rapid.SampledFrom(append(names, "nope")).Draw(t, "default"))(pod)
	}
	return pod
}
