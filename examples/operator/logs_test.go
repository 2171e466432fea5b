package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan"
	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/revision"
	"github.com/kplan-dev/kplan/rollout"
)

// The operator's log, as a person following a rollout reads it. The manager's
// logger (set in TestMain) records every entry into logs, for the namespaces a
// test captures, and passes it on to stderr with KPLAN_TEST_VERBOSE.

// logs records the operator's log entries of the captured namespaces.
var logs = &logRecorder{captures: map[string]*logCapture{}}

// logEntry is one log call: its verbosity, message, error and key/values (the
// logger's own, then the call's; a later key wins).
type logEntry struct {
	level int
	msg   string
	err   error
	kv    map[string]any
}

// get is the value of key as text ("" when absent).
func (e logEntry) get(key string) string {
	v, ok := e.kv[key]
	if !ok {
		return ""
	}
	return fmt.Sprint(v)
}

func (e logEntry) String() string {
	keys := make([]string, 0, len(e.kv))
	for k := range e.kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "V(%d) %q", e.level, e.msg)
	for _, k := range keys {
		switch k {
		case "controllerGroup", "controllerKind", "ModelServing", "reconcileID", "namespace", "name":
			continue
		}
		fmt.Fprintf(&b, " %s=%v", k, e.kv[k])
	}
	if e.err != nil {
		fmt.Fprintf(&b, " error=%v", e.err)
	}
	return b.String()
}

type logRecorder struct {
	mu       sync.Mutex
	captures map[string]*logCapture // by namespace
	// active counts the captures: with none, the operator logs as cheaply as to
	// nowhere.
	active atomic.Int32
}

// logCapture holds the entries of one namespace, in the order they were logged.
type logCapture struct {
	mu      sync.Mutex
	entries []logEntry
}

// capture records the entries whose key "namespace" is ns until the test ends.
func (r *logRecorder) capture(t *testing.T, ns string) *logCapture {
	c := &logCapture{}
	r.mu.Lock()
	r.captures[ns] = c
	r.mu.Unlock()
	r.active.Add(1)
	t.Cleanup(func() {
		r.mu.Lock()
		delete(r.captures, ns)
		r.mu.Unlock()
		r.active.Add(-1)
	})
	return c
}

// snapshot returns the entries recorded so far.
func (c *logCapture) snapshot() []logEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.entries)
}

func (r *logRecorder) record(level int, msg string, err error, values, kv []any) {
	e := logEntry{level: level, msg: msg, err: err, kv: map[string]any{}}
	for _, l := range [][]any{values, kv} {
		for i := 0; i+1 < len(l); i += 2 {
			if k, ok := l[i].(string); ok {
				e.kv[k] = l[i+1]
			}
		}
	}
	ns, _ := e.kv["namespace"].(string)
	if ns == "" {
		return
	}
	r.mu.Lock()
	c := r.captures[ns]
	r.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	c.entries = append(c.entries, e)
	c.mu.Unlock()
}

// sink returns a logr sink that records into r and passes every entry on to next
// (nil: nowhere).
func (r *logRecorder) sink(next logr.LogSink) logr.LogSink {
	return &recordingSink{r: r, next: next}
}

// recordingSink records every entry, at every verbosity, while a test captures.
type recordingSink struct {
	r      *logRecorder
	next   logr.LogSink
	values []any
}

func (s *recordingSink) Init(info logr.RuntimeInfo) {
	if s.next != nil {
		s.next.Init(logr.RuntimeInfo{CallDepth: info.CallDepth + 1})
	}
}

func (s *recordingSink) Enabled(level int) bool {
	return s.r.active.Load() > 0 || s.next != nil && s.next.Enabled(level)
}

func (s *recordingSink) Info(level int, msg string, kv ...any) {
	if s.r.active.Load() > 0 {
		s.r.record(level, msg, nil, s.values, kv)
	}
	if s.next != nil && s.next.Enabled(level) {
		s.next.Info(level, msg, kv...)
	}
}

func (s *recordingSink) Error(err error, msg string, kv ...any) {
	if s.r.active.Load() > 0 {
		s.r.record(0, msg, err, s.values, kv)
	}
	if s.next != nil {
		s.next.Error(err, msg, kv...)
	}
}

func (s *recordingSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(slices.Clip(s.values), kv...)
	if s.next != nil {
		c.next = s.next.WithValues(kv...)
	}
	return &c
}

func (s *recordingSink) WithName(name string) logr.LogSink {
	c := *s
	if s.next != nil {
		c.next = s.next.WithName(name)
	}
	return &c
}

// logReader finds entries in order: each find starts after the entry the last
// one matched.
type logReader struct {
	t       *testing.T
	entries []logEntry
	pos     int
}

// find returns the index of the first entry at or after from (-1: the reader's
// position) that has message msg and every key/value of kv (values compared as
// text); it fails the test when there is none.
func (lr *logReader) find(what string, from int, msg string, kv ...string) int {
	lr.t.Helper()
	if from < 0 {
		from = lr.pos
	}
	for i := from; i < len(lr.entries); i++ {
		if lr.entries[i].msg == msg && lr.matches(lr.entries[i], kv) {
			return i
		}
	}
	lr.t.Errorf("the operator's log lacks %s (after entry %d): %q %v", what, from, msg, kv)
	return -1
}

func (lr *logReader) matches(e logEntry, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		if e.get(kv[i]) != kv[i+1] {
			return false
		}
	}
	return true
}

// dump is the log for a failure message.
func (lr *logReader) dump() string {
	var b strings.Builder
	for i, e := range lr.entries {
		fmt.Fprintf(&b, "%3d %s\n", i, e)
	}
	return b.String()
}

// TestOperatorLogFollowsOneRollout reads the operator's log of two rollouts of
// one ModelServing (Rolling mode, two serving groups of three pods, one pod per
// role down at a time): first a change of image and environment (every pod
// deleted and created again), then a change of image only (every pod updated in
// place). In each it finds, in order: the update revision changing and the
// first step at it (Updating), each pod's delete and create (or gate closed,
// in-place update and gate opened) with its reason, a wait with rollout's reason
// (MaxUnavailableReached or WaitingForAvailable), and the rollout complete at
// the new revision. Lines at V(1) are not counted: these are the ones a person
// sees by default.
func TestOperatorLogFollowsOneRollout(t *testing.T) {
	ns := newNamespace(t)
	capture := logs.capture(t, ns)
	ms, pw, _ := deploy(t, ns, "logged", servingv1.RollingMode, 2, 100*time.Millisecond)
	podNames := slices.Sorted(func(yield func(string) bool) {
		for _, names := range msPods(t, ms) {
			for _, n := range names {
				if !yield(n) {
					return
				}
			}
		}
	})
	if len(podNames) != podCount(ms.Spec) {
		t.Fatalf("pods %v, want %d", podNames, podCount(ms.Spec))
	}

	rolloutLog := func(t *testing.T, edit func(*servingv1.ModelServing), each func(lr *logReader, start int, pod, from, to string) int) {
		from := getMS(t, ms).Status.UpdateRevision
		mark := len(capture.snapshot())
		editModelServing(t, ms, func(m *servingv1.ModelServing) { edit(m); pw.expect(m.Spec) })
		waitRolledOut(t, ms, pw, 90*time.Second)
		to := getMS(t, ms).Status.UpdateRevision
		// The completion is logged before the status that waitRolledOut reads is
		// written, so the log holds it by now.
		var entries []logEntry
		for _, e := range capture.snapshot()[mark:] {
			if e.level == 0 && e.get("controller") == "modelserving" && e.get("name") == ms.Name {
				entries = append(entries, e)
			}
		}
		lr := &logReader{t: t, entries: entries}
		defer func() {
			if t.Failed() {
				t.Logf("the operator's log of the rollout from %s to %s:\n%s", from, to, lr.dump())
			}
		}()
		moved := lr.find("the new update revision", 0, "update revision changed", "revision", to, "previous", from)
		start := lr.find("the first step at the new revision", moved, "rollout step",
			"revision", to, "complete", "false", "reason", string(rollout.ReasonUpdating), "mode", string(servingv1.RollingMode))
		if moved < 0 || start < 0 {
			return
		}
		last := start
		for _, pod := range podNames {
			last = max(last, each(lr, start, pod, from, to))
		}
		waits := 0
		for _, e := range entries[start:last] {
			if e.msg == "rollout step" && e.get("revision") == to && e.get("complete") == "false" &&
				(e.get("reason") == string(rollout.ReasonBudget) || e.get("reason") == string(rollout.ReasonNotAvailable)) && e.get("waiting") != "" {
				waits++
			}
		}
		if waits == 0 {
			t.Errorf("no rollout step between the first and the last pod write waits with %s or %s", rollout.ReasonBudget, rollout.ReasonNotAvailable)
		}
		lr.find("the completion", last, "rollout step", "revision", to, "complete", "true", "reason", string(rollout.ReasonComplete))
	}

	t.Run("Recreate", func(t *testing.T) {
		rolloutLog(t, setImageAndEnv("engine:v2"), func(lr *logReader, start int, pod, from, to string) int {
			d := lr.find("the delete of "+pod, start, "deleted pod", "action", "delete", "pod", pod, "revision", from, "reason", "Recreate")
			if d < 0 {
				return start
			}
			return lr.find("the create of "+pod, d, "created pod", "action", "create", "pod", pod, "revision", to, "reason", "BelowDesired")
		})
	})
	t.Run("InPlace", func(t *testing.T) {
		rolloutLog(t, setImage("engine:v3"), func(lr *logReader, start int, pod, from, to string) int {
			c := lr.find("the gate of "+pod+" closed", start, "closed readiness gate", "action", "close-gate", "pod", pod, "revision", to, "reason", "UpdatingInPlace")
			if c < 0 {
				return start
			}
			u := lr.find("the in-place update of "+pod, c, "updated pod in place", "action", "update-in-place", "pod", pod, "from", from, "revision", to, "reason", "ImagesChanged")
			if u < 0 {
				return c
			}
			return lr.find("the gate of "+pod+" opened", u, "opened readiness gate", "action", "open-gate", "pod", pod, "revision", to, "reason", "ImagesReady")
		})
	})
}

// TestOperatorLogFollowsAConfigMapSet reads the operator's log of a ConfigMapSet
// rollout: two pods injected by the webhook (each a "mutated pod" line naming the
// set), the first revision and the hub created, then new data: the update
// revision moving (RevisionCreated), the hub updated, each pod moved to the new
// revision (PodsUpdated), the rollout waiting for the node side, and its
// completion at the new revision.
func TestOperatorLogFollowsAConfigMapSet(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	capture := logs.capture(t, ns)
	v1 := map[string]string{"app.conf": "threads=4\n"}
	v2 := map[string]string{"app.conf": "threads=8\n"}
	set := newSet(t, ns, "logged", v1, false)
	r1, r2 := revision.RevisionHash(v1, 0), revision.RevisionHash(v2, 0)
	pods := []string{"web-0", "web-1"}
	for _, p := range pods {
		newWebPod(t, ns, p)
	}
	for _, p := range pods {
		runNode(t, ns, p, set)
	}
	waitCondition(t, set, metav1.ConditionTrue, revision.ReasonRolloutComplete, "every pod runs revision "+r1)
	err := retry.RetryOnConflict(editBackoff, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		set.Spec.Data = v2
		return admin.Update(ctx, set)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Play the node for each pod once it is asked for r2 (the budget may move
	// them one at a time).
	ran := map[string]bool{}
	eventually(t, "every pod confirms "+r2, func() error {
		for name, rev := range wantedRevisions(t, ns, set, pods) {
			if rev == r2 && !ran[name] {
				runNode(t, ns, name, set)
				ran[name] = true
			}
		}
		if len(ran) != len(pods) {
			return fmt.Errorf("pods run on %s: %v", r2, ran)
		}
		return nil
	})
	waitCondition(t, set, metav1.ConditionTrue, revision.ReasonRolloutComplete, "every pod runs revision "+r2)
	// The controller logs the condition once its status write has returned: the
	// status can be read before the line is written.
	if err := waitFor(30*time.Second, func() error {
		for _, e := range capture.snapshot() {
			if e.msg == "rollout complete" && e.get("controller") == "configmapset" && e.get("name") == set.Name && e.get("revision") == r2 {
				return nil
			}
		}
		return fmt.Errorf("no completion at %s logged", r2)
	}); err != nil {
		t.Error(err) // the checks below say what the log holds
	}

	var entries []logEntry
	for _, e := range capture.snapshot() {
		if e.level == 0 && (e.get("controller") == "configmapset" && e.get("name") == set.Name || e.get("controller") == "") {
			entries = append(entries, e)
		}
	}
	lr := &logReader{t: t, entries: entries}
	defer func() {
		if t.Failed() {
			t.Logf("the operator's log:\n%s", lr.dump())
		}
	}()
	first := lr.find("the first revision", 0, "update revision changed", "revision", r1, "previous", "", "reason", string(revision.ReasonRevisionCreated))
	lr.find("the hub created", first, "wrote hub ConfigMap", "action", string(kplan.ActionCreate), "configMap", revision.HubName(set.Name), "revision", r1)
	for _, p := range pods {
		lr.find("the webhook injecting "+p, 0, "mutated pod", "pod", p, "reason", "ConfigMapSetSelector", "configMapSet", set.Name, "revision", r1)
	}
	done1 := lr.find("the completion at "+r1, first, "rollout complete", "revision", r1, "reason", string(revision.ReasonRolloutComplete))
	if done1 < 0 {
		return
	}
	moved := lr.find("the move to "+r2, done1, "update revision changed", "revision", r2, "previous", r1, "reason", string(revision.ReasonRevisionCreated))
	if moved < 0 {
		return
	}
	lr.find("the hub updated", moved, "wrote hub ConfigMap", "action", string(kplan.ActionUpdate), "revision", r2, "revisions", "2")
	last := moved
	for _, p := range pods {
		last = max(last, lr.find(p+" moved to "+r2, moved, "moved pod to revision", "action", "patch", "pod", p, "revision", r2, "reason", string(revision.ReasonPodsUpdated)))
	}
	lr.find("the rollout waiting for the node side", moved, "rollout waiting", "revision", r2, "reason", string(revision.ReasonRevisionNotConfirmed))
	lr.find("the completion at "+r2, last, "rollout complete", "revision", r2, "reason", string(revision.ReasonRolloutComplete))
}
