package reload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	cmsv1 "github.com/kplan-dev/kplan/examples/api/configmapset/v1alpha1"
	"github.com/kplan-dev/kplan/revision"
)

// Config is what the agent serves and for whom.
type Config struct {
	// Revision is the pod's wanted revision when the container started (the
	// downward API resolves it once, at container start).
	Revision string
	// HubFile is the hub ConfigMap's revisions file (a ConfigMap volume). When it is
	// missing or does not hold Revision yet (the kubelet refreshes ConfigMap volumes
	// only about once a minute), the hub is read from the API server.
	HubFile string
	// DataDir is the shared volume the files are written into.
	DataDir string
	// SetName, Namespace and PodName name the ConfigMapSet and the pod.
	SetName, Namespace, PodName string
	// Poll is how often the pod is read (default 2s).
	Poll time.Duration
	// ProcRoot is the proc file system through which the agent sees the pod's
	// processes to restart injected containers (DefaultProcRoot when empty).
	ProcRoot string
}

// ConfigFromEnv reads the configuration revision.Inject gives the sidecar:
// revision.EnvRevision, EnvHubFile, EnvDataDir, EnvSetName, EnvPodName and
// EnvPodNamespace.
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{
		Revision:  getenv(revision.EnvRevision),
		HubFile:   getenv(revision.EnvHubFile),
		DataDir:   getenv(revision.EnvDataDir),
		SetName:   getenv(revision.EnvSetName),
		Namespace: getenv(revision.EnvPodNamespace),
		PodName:   getenv(revision.EnvPodName),
	}
}

func (c Config) check() error {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{revision.EnvDataDir, c.DataDir}, {revision.EnvSetName, c.SetName}, {revision.EnvPodNamespace, c.Namespace}, {revision.EnvPodName, c.PodName},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("not set: %v", missing)
	}
	return nil
}

// ErrRestart is returned by Run when the container must restart to load another
// revision: the pod now wants a revision other than Config.Revision, or
// revision.Restarts lists this sidecar. Exiting lets the kubelet restart the sidecar
// (a native sidecar restarts whatever its exit code), which resolves the downward
// API anew.
var ErrRestart = errors.New("restart to load the pod's wanted revision")

// Agent serves one ConfigMapSet's files to one pod and reports the revision it
// serves.
type Agent struct {
	Config Config
	// Core reads the pod and the hub ConfigMap, and patches the pod.
	Core corev1client.CoreV1Interface
	// Dynamic reads the ConfigMapSet (resource SetResource).
	Dynamic dynamic.Interface
	// Log receives progress lines.
	Log io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Signaller restarts the injected containers (default: a Signaller on
	// Config.ProcRoot sending real signals).
	Signaller *Signaller

	reported string    // last "waiting for" line, to log each once
	started  time.Time // when Run started
}

// statusGrace is how long the agent waits for the pod status to show its own start
// before it restarts once more (see Run).
const statusGrace = 5 * time.Second

// Run serves Config.Revision into Config.DataDir and then keeps the pod's current
// revision annotation right:
//
//  1. the revision's files are read from the hub and written atomically
//     (WriteAtomic); a file name that would leave the directory refuses the whole
//     revision, nothing is written, and Run retries (the hub may be fixed);
//  2. every Poll the pod and the ConfigMapSet are read: when the pod wants another
//     revision, or revision.Restarts lists this sidecar, Run returns ErrRestart;
//     when revision.MarkCurrent says the pod may be marked, the patch is applied
//     (with the pod's UID, so a re-created pod is never marked);
//  3. when revision.Restarts lists injected containers (restartInjectedContainers),
//     unless the set's restartMethod is External, Run sends each one's main process SIGTERM through the pod's shared process
//     namespace (Signaller) and logs every signal; the kubelet restarts the
//     containers, and step 2 marks the pod once they run again. A container it
//     cannot signal is logged with the reason and what to change, and Run waits
//     (see the package documentation for the other ways to restart it).
//
// It returns nil when ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.Config.check(); err != nil {
		return err
	}
	poll := a.Config.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	now := a.Now
	if now == nil {
		now = time.Now
	}
	a.started = now()
	served := false
	for {
		if !served && a.Config.Revision != "" {
			files, err := a.files(ctx)
			if err == nil {
				err = a.write(files, now())
			}
			if err != nil {
				a.once(fmt.Sprintf("revision %s: %v", a.Config.Revision, err))
			} else {
				served = true
			}
		}
		err := a.check(ctx, served, now)
		if errors.Is(err, ErrRestart) {
			return err
		}
		if err != nil {
			a.once(err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

func (a *Agent) write(files map[string]string, now time.Time) error {
	changed, err := WriteAtomic(a.Config.DataDir, files, now)
	if err != nil {
		return err
	}
	if changed {
		a.logf("serving revision %s (%d files) in %s", a.Config.Revision, len(files), a.Config.DataDir)
	}
	return nil
}

// files returns the wanted revision's files, from the hub file when it holds the
// revision, else from the hub ConfigMap.
func (a *Agent) files(ctx context.Context) (map[string]string, error) {
	rev := a.Config.Revision
	if a.Config.HubFile != "" {
		if raw, err := os.ReadFile(a.Config.HubFile); err == nil {
			cm := &corev1.ConfigMap{Data: map[string]string{revision.HubDataKey: string(raw)}}
			cm.Namespace, cm.Name = a.Config.Namespace, revision.HubName(a.Config.SetName)
			if hub, err := revision.DecodeHub(cm); err == nil && hub.Index(rev) >= 0 {
				return hub.Files(rev)
			}
		}
	}
	key := types.NamespacedName{Namespace: a.Config.Namespace, Name: revision.HubName(a.Config.SetName)}
	cm, err := a.Core.ConfigMaps(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("hub ConfigMap %s: %w", key, err)
	}
	hub, err := revision.DecodeHub(cm)
	if err != nil {
		return nil, err
	}
	return hub.Files(rev)
}

// check reads the pod and the set and restarts, waits or marks the pod current.
func (a *Agent) check(ctx context.Context, served bool, now func() time.Time) error {
	pod, err := a.Core.Pods(a.Config.Namespace).Get(ctx, a.Config.PodName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", a.Config.Namespace, a.Config.PodName, err)
	}
	keys, err := revision.KeysFor(a.Config.SetName)
	if err != nil {
		return err
	}
	if want := pod.Annotations[keys.UpdateRevision]; want != a.Config.Revision {
		a.logf("pod %s/%s now wants revision %q, serving %q", pod.Namespace, pod.Name, want, a.Config.Revision)
		return ErrRestart
	}
	if !served {
		return nil
	}
	set, err := a.set(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil // deleted: pods keep the files written, nothing to report
		}
		return fmt.Errorf("ConfigMapSet %s/%s: %w", a.Config.Namespace, a.Config.SetName, err)
	}
	restarts, err := revision.Restarts(pod, set)
	if err != nil {
		return err
	}
	if slices.Contains(restarts, revision.ReloadSidecarName(set.Name)) {
		// The kubelet's status may still show the previous run of this container, and
		// start times have one-second precision: restart only when this process
		// started before the wanted revision was asked for, or the status has not
		// caught up after statusGrace.
		st, err := keys.Read(pod)
		if err != nil {
			return err
		}
		if a.started.Before(st.UpdateTimestamp) || now().Sub(a.started) > statusGrace {
			a.logf("revision.Restarts lists this sidecar (started before the wanted revision's timestamp)")
			return ErrRestart
		}
		a.once("waiting for the pod status to show this container's start")
		return nil
	}
	if len(restarts) > 0 {
		if set.Spec.UpdateStrategy.RestartMethod == revision.RestartExternal {
			a.once(fmt.Sprintf("waiting for another restarter to restart %v (restartMethod %s)", restarts, revision.RestartExternal))
			return nil
		}
		return a.restart(pod, restarts, keys)
	}
	patch, ok, err := revision.MarkCurrent(pod, set, now())
	if err != nil || !ok {
		if err == nil && !podReady(pod) {
			a.once("waiting for the pod to be ready")
		}
		return err
	}
	b, err := patch.MergePatch()
	if err != nil {
		return err
	}
	if _, err := a.Core.Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("marking revision %s current: %w", a.Config.Revision, err)
	}
	a.logf("pod %s/%s marked current at revision %s", pod.Namespace, pod.Name, a.Config.Revision)
	return nil
}

// SetResource is the ConfigMapSet resource the agent reads.
var SetResource = cmsv1.GroupVersion.WithResource("configmapsets")

// set reads the agent's ConfigMapSet.
func (a *Agent) set(ctx context.Context) (*revision.ConfigMapSet, error) {
	u, err := a.Dynamic.Resource(SetResource).Namespace(a.Config.Namespace).Get(ctx, a.Config.SetName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var set revision.ConfigMapSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &set); err != nil {
		return nil, err
	}
	return &set, nil
}

// restart signals the main processes of the injected containers Restarts listed,
// logging each signal and each container it cannot restart.
func (a *Agent) restart(pod *corev1.Pod, containers []string, keys revision.Keys) error {
	st, err := keys.Read(pod)
	if err != nil {
		return err
	}
	if a.Signaller == nil {
		a.Signaller = &Signaller{Proc: a.Config.ProcRoot}
	}
	results, err := a.Signaller.Restart(pod, containers, st.UpdateTimestamp)
	if err != nil {
		a.once(fmt.Sprintf("cannot restart %v for revision %s: %v", containers, a.Config.Revision, err))
		return nil
	}
	var waits, failed []string
	for _, r := range results {
		switch {
		case r.Outcome == Signalled:
			a.logf("sent SIGTERM to container %s (pid %d, started %s) to load revision %s", r.Container, r.PID, r.Started.UTC().Format(time.RFC3339), a.Config.Revision)
		case r.Outcome.CanProceed():
			waits = append(waits, r.Container)
		default:
			failed = append(failed, r.String())
		}
	}
	switch {
	case len(failed) > 0:
		// One line for every failure, logged once while it lasts.
		a.once(fmt.Sprintf("cannot restart for revision %s (the pod stays unconfirmed until they restart): %s", a.Config.Revision, strings.Join(failed, "; ")))
	case len(waits) > 0:
		a.once(fmt.Sprintf("waiting for the kubelet to restart %v", waits))
	}
	return nil
}

func (a *Agent) once(msg string) {
	if msg != a.reported {
		a.reported = msg
		a.logf("%s", msg)
	}
}

func (a *Agent) logf(format string, args ...any) {
	if a.Log != nil {
		fmt.Fprintf(a.Log, format+"\n", args...)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
