package operator_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/reload"
	"github.com/kplan-dev/kplan/revision"
)

// updateSet changes the set's spec, re-reading it when the operator's status write
// got in between.
func updateSet(t *testing.T, set *revision.ConfigMapSet, change func(*revision.ConfigMapSet)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		change(set)
		return admin.Update(context.Background(), set)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// taggedFiles returns files whose every line names rev, so a reader can tell which
// revision each file it read came from.
func taggedFiles(rev string) map[string]string {
	return map[string]string{
		"app.conf":    strings.Repeat("rev="+rev+"\n", 200),
		"limits.conf": strings.Repeat("rev="+rev+"\n", 300),
		"routes.conf": strings.Repeat("rev="+rev+"\n", 100),
	}
}

// podState returns the pod's wanted and current revisions.
func podState(t *testing.T, ns, name string, set *revision.ConfigMapSet) revision.PodState {
	t.Helper()
	keys, err := revision.KeysFor(set.Name)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &pod); err != nil {
		t.Fatal(err)
	}
	st, err := keys.Read(&pod)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// mixReader reads a data directory the way an application should (resolve ..data
// once, read every file from there) until stopped, and counts reads that mix
// revisions or miss files.
type mixReader struct {
	stop        atomic.Bool
	reads, bad  atomic.Int64
	revs        sync.Map // revision tags seen
	first       atomic.Value
	wg          sync.WaitGroup
	wantedFiles int
}

func startMixReader(dir string, files int) *mixReader {
	r := &mixReader{wantedFiles: files}
	r.wg.Go(func() {
		for !r.stop.Load() {
			got, err := reload.ReadServed(dir)
			if got == nil || errors.Is(err, os.ErrNotExist) {
				continue // nothing served yet, or the directory was replaced meanwhile
			}
			tags := map[string]bool{}
			for _, content := range got {
				for _, line := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
					tags[line] = true
				}
			}
			r.reads.Add(1)
			if len(got) != r.wantedFiles || len(tags) != 1 || err != nil {
				r.bad.Add(1)
				r.first.CompareAndSwap(nil, fmt.Sprintf("%d files, tags %v, err %v", len(got), tags, err))
				continue
			}
			for tag := range tags {
				r.revs.Store(tag, true)
			}
		}
	})
	return r
}

func (r *mixReader) finish(t *testing.T, wantRevs ...string) {
	t.Helper()
	r.stop.Store(true)
	r.wg.Wait()
	if n := r.bad.Load(); n > 0 {
		t.Errorf("%d of %d reads saw a mix of revisions or missing files; first: %v", n, r.reads.Load(), r.first.Load())
	}
	for _, rev := range wantRevs {
		if _, ok := r.revs.Load("rev=" + rev); !ok {
			t.Errorf("the reader never saw revision %s (it read %d times)", rev, r.reads.Load())
		}
	}
	t.Logf("%d consistent reads", r.reads.Load())
}

// waitComplete waits until the set's rollout is complete on revision rev for n pods:
// currentRevision = updateRevision = rev and every pod updated and ready.
func waitComplete(t *testing.T, set *revision.ConfigMapSet, rev string, n int32) {
	t.Helper()
	eventually(t, "set status completed on "+rev, func() error {
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		s := set.Status
		if s.UpdateRevision != rev || s.CurrentRevision != rev || s.MatchedPods != n || s.UpdatedPods != n || s.UpdatedReadyPods != n {
			return fmt.Errorf("status %+v", s)
		}
		return nil
	})
}

// waitServes waits until the agent serves files in dir and the pod is marked current
// on rev.
func waitServes(t *testing.T, k *kubelet, set *revision.ConfigMapSet, rev string, files map[string]string) {
	t.Helper()
	eventually(t, fmt.Sprintf("pod %s serves and is marked current on %s", k.pod, rev), func() error {
		got, err := reload.ReadServed(k.dir)
		if err != nil {
			return err
		}
		if !maps.Equal(got, files) {
			return fmt.Errorf("%s serves %d files, not revision %s's", k.dir, len(got), rev)
		}
		if st := podState(t, k.ns, k.pod, set); st.CurrentRevision != rev || st.UpdateRevision != rev {
			return fmt.Errorf("pod %s: %+v", k.pod, st)
		}
		return nil
	})
	for name, want := range files {
		b, err := os.ReadFile(filepath.Join(k.dir, name))
		if err != nil || string(b) != want {
			t.Errorf("visible file %s: %d bytes (%v), want revision %s's", name, len(b), err, rev)
		}
	}
}

// TestReloadAgent runs the reload agent as a process for each of two pods (a temp
// directory as its volume, the test as the kubelet) against the operator: the first
// revision is served and the set completes; new data with partition 50% switches one
// pod atomically while a reader watches; partition 100% rolls it back; partition 0
// completes the new revision.
func TestReloadAgent(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	v1, v2 := taggedFiles("v1"), taggedFiles("v2")
	r1, r2 := revision.RevisionHash(v1, 0), revision.RevisionHash(v2, 0)
	set := newSet(t, ns, "web-config", v1, false)
	pods := []string{"web-0", "web-1"}
	kubelets := map[string]*kubelet{}
	for _, p := range pods {
		newWebPod(t, ns, p)
		kubelets[p] = startKubelet(t, ns, p, set.Name, agentKubeconfig(t, ns, "web", set.Name, p))
	}

	t.Run("each agent serves revision 1, marks its pod and the set completes", func(t *testing.T) {
		for _, p := range pods {
			waitServes(t, kubelets[p], set, r1, v1)
		}
		waitComplete(t, set, r1, 2)
	})

	var moved *kubelet
	t.Run("new data with partition 50% switches one pod atomically", func(t *testing.T) {
		readers := map[string]*mixReader{}
		for _, p := range pods {
			readers[p] = startMixReader(kubelets[p].dir, len(v1))
		}
		half := intstr.FromString("50%")
		updateSet(t, set, func(s *revision.ConfigMapSet) { s.Spec.Data, s.Spec.UpdateStrategy.Partition = v2, &half })
		eventually(t, "one pod asked for revision 2", func() error {
			for _, p := range pods {
				if podState(t, ns, p, set).UpdateRevision == r2 {
					moved = kubelets[p]
					return nil
				}
			}
			return errors.New("no pod wants revision 2 yet")
		})
		waitServes(t, moved, set, r2, v2)
		for _, p := range pods {
			if kubelets[p] == moved {
				readers[p].finish(t, "v1", "v2")
			} else {
				readers[p].finish(t, "v1")
				if st := podState(t, ns, p, set); st.CurrentRevision != r1 || st.UpdateRevision != r1 {
					t.Errorf("pod %s kept by the partition: %+v, want revision %s", p, st, r1)
				}
			}
		}
		if moved.restarts() < 1 {
			t.Errorf("the agent of %s switched revision without restarting", moved.pod)
		}
		eventually(t, "status: one of two pods updated", func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
				return err
			}
			if s := set.Status; s.UpdateRevision != r2 || s.CurrentRevision != r1 || s.UpdatedPods != 1 || s.UpdatedReadyPods != 1 {
				return fmt.Errorf("status %+v", s)
			}
			return nil
		})
	})
	if moved == nil {
		t.FailNow()
	}

	t.Run("partition 100% rolls the pod back to revision 1", func(t *testing.T) {
		reader := startMixReader(moved.dir, len(v1))
		all := intstr.FromString("100%")
		updateSet(t, set, func(s *revision.ConfigMapSet) { s.Spec.UpdateStrategy.Partition = &all })
		waitServes(t, moved, set, r1, v1)
		reader.finish(t, "v1")
		eventually(t, "status: no pod on revision 2", func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
				return err
			}
			if s := set.Status; s.CurrentRevision != r1 || s.UpdatedPods != 0 || s.ReadyPods != 2 {
				return fmt.Errorf("status %+v", s)
			}
			return nil
		})
	})

	t.Run("partition 0 completes revision 2 on every pod", func(t *testing.T) {
		updateSet(t, set, func(s *revision.ConfigMapSet) { s.Spec.UpdateStrategy.Partition = nil })
		for _, p := range pods {
			waitServes(t, kubelets[p], set, r2, v2)
		}
		waitComplete(t, set, r2, 2)
	})
}

// TestReloadAgentRefusesEscapingHubKey: a hub revision holding a file name that would
// leave the data directory is refused whole: nothing is written inside the directory
// or beside it, the agent says which name, and the pod is never marked current. The
// hub is written by hand (no ConfigMapSet owns it), so the agent's own check is what
// is tested, whatever the controller validates.
func TestReloadAgentRefusesEscapingHubKey(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	const setName = "evil"
	keys, err := revision.KeysFor(setName)
	if err != nil {
		t.Fatal(err)
	}
	// Written as raw JSON: whether the library's hub encoder would refuse the key
	// does not matter, the hub is whatever the API server holds.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: revision.HubName(setName)},
		Data: map[string]string{revision.HubDataKey: `[{"name":"bad","data":{"ok.conf":"x","../escape.conf":"pwned"}}]`}}
	if err := admin.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// A pod the set's webhook would have injected: the sidecar and its annotations.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "victim", Labels: map[string]string{"app": "none"},
			Annotations: map[string]string{keys.UpdateRevision: "bad", keys.UpdateRevisionTimestamp: revision.FormatTimestamp(time.Now())}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "default",
			InitContainers: []corev1.Container{{Name: revision.ReloadSidecarName(setName), Image: "reload", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
				Env: []corev1.EnvVar{
					{Name: revision.EnvRevision, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + keys.UpdateRevision + "']"}}},
					{Name: revision.EnvHubFile, Value: "/hub/revisions"}, {Name: revision.EnvDataDir, Value: "/data"},
					{Name: revision.EnvSetName, Value: setName},
					{Name: revision.EnvPodName, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: revision.EnvPodNamespace, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				}}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}},
		},
	}
	if err := admin.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	k := startKubelet(t, ns, "victim", setName, agentKubeconfig(t, ns, "default", setName, "victim"))
	eventually(t, "the agent refuses the revision", func() error {
		if !strings.Contains(k.logs(), `"../escape.conf"`) {
			return fmt.Errorf("agent log does not name the refused key yet:\n%s", k.logs())
		}
		return nil
	})
	time.Sleep(time.Second) // a few more polls: still nothing may happen
	if entries, err := os.ReadDir(k.dir); err != nil || len(entries) != 0 {
		t.Errorf("the data directory holds %d entries (%v), want none", len(entries), err)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(k.dir), "escape.conf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("escape.conf was written beside the data directory: %v", err)
	}
	if st := podState(t, ns, "victim", &revision.ConfigMapSet{ObjectMeta: metav1.ObjectMeta{Name: setName}}); st.CurrentRevision != "" {
		t.Errorf("the pod was marked current on %q", st.CurrentRevision)
	}
}

// TestReloadAgentWaitsForInjectedRestarts: with restartInjectedContainers the agent
// serves the new revision but marks the pod current only once the container that
// mounts the files has restarted (revision.Restarts). Here the agent finds no process
// of it to signal, says so, and the test plays another restarter (a node daemon).
func TestReloadAgentWaitsForInjectedRestarts(t *testing.T) {
	ns := newNamespace(t)
	v1, v2 := taggedFiles("v1"), taggedFiles("v2")
	r1, r2 := revision.RevisionHash(v1, 0), revision.RevisionHash(v2, 0)
	set := newSet(t, ns, "restarting", v1, false)
	updateSet(t, set, func(s *revision.ConfigMapSet) { s.Spec.UpdateStrategy.RestartInjectedContainers = true })
	// The webhook reads the set from the operator's cache: create the pod once the
	// controller has planned the new spec, so the injection shares the pod's process
	// namespace (signal restarts) rather than following the cached old spec.
	eventually(t, "the operator sees restartInjectedContainers", func() error {
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		if set.Status.ObservedGeneration != set.Generation {
			return fmt.Errorf("observed generation %d of %d", set.Status.ObservedGeneration, set.Generation)
		}
		return nil
	})
	newWebPod(t, ns, "web-0")
	k := startKubelet(t, ns, "web-0", set.Name, agentKubeconfig(t, ns, "web", set.Name, "web-0"))
	waitServes(t, k, set, r1, v1)

	updateSet(t, set, func(s *revision.ConfigMapSet) { s.Spec.Data = v2 })
	eventually(t, "the agent serves revision 2 and waits for the node", func() error {
		got, err := reload.ReadServed(k.dir)
		if err != nil || !maps.Equal(got, v2) {
			return fmt.Errorf("not serving revision 2 yet (%v)", err)
		}
		// No process of the test machine carries main's marker: the agent says it
		// cannot signal it, and another restarter (here the test) has to.
		if !strings.Contains(k.logs(), "container main: NotFound") {
			return errors.New("the agent does not say it cannot restart main")
		}
		return nil
	})
	time.Sleep(time.Second) // several polls: the pod must stay unconfirmed
	if st := podState(t, ns, "web-0", set); st.UpdateRevision != r2 || st.CurrentRevision != r1 {
		t.Fatalf("before main restarted: %+v, want wanted %s and current still %s", st, r2, r1)
	}
	if err := k.restartContainer("main"); err != nil {
		t.Fatal(err)
	}
	waitServes(t, k, set, r2, v2)
	waitComplete(t, set, r2, 1)
}
