package cli

import (
	"flag"
	"fmt"
	"math"
	"strings"

	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/manifest"
	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/rollout"
)

var rolloutCommand = &command{
	name:    "rollout",
	summary: "the next rolling, gang or group update step, or a whole simulated rollout (rollout.Plan)",
	usage: `The input holds the pods (revision, gang and column from their labels, see --labels)
and optionally one StatefulSet, which gives the target revision
(status.updateRevision), the replicas and maxUnavailable, and selects its pods;
or one ModelServing (serving.examples.kplan.dev, the examples operator's), which
gives the mode, labels, target, budgets, partition and minReadySeconds and selects
its pods: in Rolling and Lockstep mode one role's pods (--role), planned alone;
its pods are read as the operator reads them (not ready while a readiness gate,
such as the operator's during an in-place image update, is not True);
or one LeaderWorkerSet (leaderworkerset.x-k8s.io), planned in gang mode over its
groups (leader and workers, by worker index), with the maxUnavailable, maxSurge
and partition of spec.rolloutStrategy.rollingUpdateConfiguration and the target
from its leader StatefulSet (named like it) when that is given too;
or one DisaggregatedSet (disaggregatedset.x-k8s.io), its roles planned in
lockstep (rollout.PlanLockstep), each role's groups as gangs, with the target
from its newest LeaderWorkerSets when they are given too.
--target, --replicas, --max-unavailable, --max-surge, --latest-ratio, --history
and --min-ready-seconds, when given, win over the object's fields.
Prints the next step: replicas to update in place (their pods, and the columns
of a gang's members to create), create (each in its slot: index, column, a
gang's member columns) and delete (their pods), gangs to repair, why the others
wait, and the step's reason and message as a condition would carry them. With --simulate, applies steps the way a cluster would
(updated replicas become available one reconcile later) until the rollout is
complete, checking every step against the rollout invariants, and prints a
table (or the steps, with -o yaml or -o json).

  kubectl get sts web -o yaml > sts.yaml
  kubectl get pods -l app=web -o yaml | kplan rollout -f sts.yaml -f - --simulate
  kubectl get modelserving llm -o yaml > ms.yaml
  kubectl get pods -l modelserving.volcano.sh/name=llm -o yaml | kplan rollout -f ms.yaml -f - --simulate
  kubectl get lws vllm -o yaml > lws.yaml
  kubectl get sts vllm -o yaml > leader.yaml
  kubectl get pods -l leaderworkerset.sigs.k8s.io/name=vllm -o yaml | kplan rollout -f lws.yaml -f leader.yaml -f -
  kubectl get disaggregatedset pd -o yaml > ds.yaml
  kubectl get lws -l disaggregatedset.x-k8s.io/name=pd -o yaml > ds-lws.yaml
  kubectl get pods -l disaggregatedset.x-k8s.io/name=pd -o yaml | kplan rollout -f ds.yaml -f ds-lws.yaml -f - --simulate
`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.mode, "mode", "rolling", "rolling, gang or group")
		fs.StringVar(&o.target, "target", "", "the target revision (default: the StatefulSet's status.updateRevision)")
		fs.IntVar(&o.replicas, "replicas", 0, "desired replicas, gangs, or rows per column (default: the StatefulSet's, else as many as there are)")
		fs.StringVar(&o.maxUnavailable, "max-unavailable", "", "maxUnavailable, integer or percent (default: the StatefulSet's, else 25%)")
		fs.StringVar(&o.maxSurge, "max-surge", "", "maxSurge, integer or percent (default: 0 with a StatefulSet, which never surges, else 25%)")
		fs.StringVar(&o.latestRatio, "latest-ratio", "", "how many replicas should run the target, integer or percent (default: all)")
		fs.StringVar(&o.versionOrder, "version-order", "LessFirst", "which old version is cut first: LessFirst, LatestFirst or OldFirst")
		fs.StringVar(&o.history, "history", "", "known revisions, oldest first, comma-separated")
		fs.StringVar(&o.columns, "columns", "", "comma-separated: in group mode the columns that must exist; in gang mode the columns every gang has (the column label's values), so members missing from one are found")
		fs.StringVar(&o.labels, "labels", "default", "label scheme: default (controller-revision-hash) or kthena (ModelServing revision, group-name gangs, role columns)")
		fs.StringVar(&o.revisionLabel, "revision-label", "", "the pod label holding the revision (overrides --labels)")
		fs.StringVar(&o.gangLabel, "gang-label", "", "the pod label grouping pods into gangs (overrides --labels)")
		fs.StringVar(&o.columnLabel, "column-label", "", "the pod label holding the column, a gang member's in gang mode (overrides --labels)")
		fs.StringVar(&o.indexLabel, "index-label", "", "the pod label holding the replica's index (a pod's ordinal, a gang's group index, a row); creates take the lowest free (default: none)")
		fs.IntVar(&o.minReadySeconds, "min-ready-seconds", 0, "how long a pod must be ready to be available (needs --now or the clock)")
		fs.Var(&o.now, "now", "the current time, RFC 3339 (default: the clock)")
		fs.BoolVar(&o.simulate, "simulate", false, "simulate the whole rollout and print a table (-o yaml or json for the steps)")
		fs.IntVar(&o.maxSteps, "max-steps", 100, "give up a simulation after this many reconciles")
		fs.StringVar(&o.role, "role", "", "with a ModelServing in Rolling or Lockstep mode: the role to plan (default: its first)")
	},
	run: runRollout,
}

// stepOut is one rollout step as printed.
type stepOut struct {
	Mode           string    `json:"mode"`
	TargetRevision string    `json:"targetRevision"`
	Replicas       int       `json:"replicas"`
	Budget         budgetOut `json:"budget"`
	Latest         int       `json:"latest"`
	Complete       bool      `json:"complete"`
	// Reason and Message say where the rollout stands, as a condition would.
	Reason  string      `json:"reason"`
	Message string      `json:"message,omitempty"`
	Update  []updateOut `json:"update,omitempty"`
	Create  []createOut `json:"create,omitempty"`
	Delete  []deleteOut `json:"delete,omitempty"`
	Repair  []repairOut `json:"repair,omitempty"`
	Waiting []waitOut   `json:"waiting,omitempty"`
}

// repairOut is a gang whose missing members are to be created.
type repairOut struct {
	Replica  string `json:"replica"`
	Revision string `json:"revision"`
	Column   string `json:"column,omitempty"`
	Index    int    `json:"index"`
	// Missing are the columns of the members to create.
	Missing []string `json:"missing"`
}

// deleteOut is a replica to delete and its pods.
type deleteOut struct {
	Replica string   `json:"replica"`
	Column  string   `json:"column,omitempty"`
	Pods    []string `json:"pods,omitempty"`
}

type waitOut struct {
	Replica string `json:"replica"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type budgetOut struct {
	MaxUnavailable int `json:"maxUnavailable"`
	MaxSurge       int `json:"maxSurge"`
}

type updateOut struct {
	Replica string `json:"replica"`
	From    string `json:"from"`
	To      string `json:"to"`
	Column  string `json:"column,omitempty"`
	Index   int    `json:"index"`
	// Pods are the pods to update; Missing the columns of a gang's members to
	// create.
	Pods    []string `json:"pods,omitempty"`
	Missing []string `json:"missing,omitempty"`
	// DataFrom and DataTo are set when the strategy releases data too.
	DataFrom string `json:"dataFrom,omitempty"`
	DataTo   string `json:"dataTo,omitempty"`
}

// createOut is one replica to create, in its slot.
type createOut struct {
	Revision string   `json:"revision"`
	Column   string   `json:"column,omitempty"`
	Index    int      `json:"index"`
	Members  []string `json:"members,omitempty"`
}

func runRollout(o *options, objs []manifest.Object) (any, error) {
	strategy, opts, err := rolloutStrategy(o)
	if err != nil {
		return nil, err
	}
	pods, podObjs, err := decodePods(objs)
	if err != nil {
		return nil, err
	}
	owner, err := rolloutOwner(objs)
	if err != nil {
		return nil, err
	}
	switch {
	case owner == nil:
	case owner.Kind == "StatefulSet":
		pods, podObjs, err = fromStatefulSet(owner, o, &strategy, pods, podObjs)
	case owner.Kind == "ModelServing":
		pods, podObjs, err = fromModelServing(owner, o, &strategy, &opts, pods, podObjs)
	case owner.Kind == "LeaderWorkerSet":
		pods, podObjs, err = fromLeaderWorkerSet(owner, objs, o, &strategy, &opts, pods, podObjs)
	case owner.Kind == "DisaggregatedSet":
		return runLockstep(owner, objs, o, strategy, opts, pods, podObjs)
	}
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("no pods in %s", inputs(o))
	}
	if strategy.TargetRevision == "" {
		return nil, usagef("--target is required (or give the StatefulSet, whose status.updateRevision is the target)")
	}
	if opts.MinReadySeconds > 0 {
		opts.Now = o.now.Time()
	}
	replicas, err := rollout.FromPods(pods, opts)
	if err != nil {
		return nil, blame(err, nil, podObjs)
	}
	if owner != nil && owner.Kind == "LeaderWorkerSet" {
		owners.HighestIndexFirst(replicas)
	}
	if strategy.Replicas == 0 {
		strategy.Replicas = countReplicas(replicas, strategy.Mode)
	}
	if o.simulate {
		return simulate(strategy, replicas, o.maxSteps)
	}
	step, err := rollout.Plan(replicas, strategy)
	if err != nil {
		return nil, blame(err, nil, podObjs)
	}
	return toStepOut(strategy, step), nil
}

// toStepOut is how a step is printed.
func toStepOut(strategy rollout.Strategy, step rollout.Step) stepOut {
	out := stepOut{
		Mode: strings.ToLower(string(strategy.Mode)), TargetRevision: strategy.TargetRevision, Replicas: strategy.Replicas,
		Budget: budgetOut(step.Budget), Latest: step.Latest, Complete: step.Complete,
		Reason: string(step.Reason), Message: step.Message,
	}
	out.Waiting = convert(step.Waiting, func(w rollout.Wait) waitOut {
		return waitOut{Replica: w.Replica, Reason: string(w.Reason), Message: w.Message}
	})
	out.Update = convert(step.Update, func(u rollout.Update) updateOut { return updateOut(u) })
	out.Create = convert(step.Create, func(c rollout.Create) createOut { return createOut(c) })
	out.Delete = convert(step.Delete, func(d rollout.Delete) deleteOut { return deleteOut(d) })
	out.Repair = convert(step.Repair, func(r rollout.Repair) repairOut { return repairOut(r) })
	return out
}

// rolloutStrategy reads the strategy and pod options from the flags.
func rolloutStrategy(o *options) (rollout.Strategy, rollout.PodOptions, error) {
	var s rollout.Strategy
	var opts rollout.PodOptions
	var err error
	if s.Mode, err = choice("mode", o.mode, []string{"rolling", "gang", "group"},
		[]rollout.Mode{rollout.Rolling, rollout.Gang, rollout.Group}); err != nil {
		return s, opts, err
	}
	if s.VersionOrder, err = choice("version-order", o.versionOrder, []string{"LessFirst", "LatestFirst", "OldFirst"},
		[]rollout.VersionOrder{rollout.LessFirst, rollout.LatestFirst, rollout.OldFirst}); err != nil {
		return s, opts, err
	}
	if o.replicas < 0 || o.minReadySeconds < 0 || o.maxSteps < 1 {
		return s, opts, usagef("--replicas and --min-ready-seconds must not be negative, --max-steps must be positive")
	}
	if o.minReadySeconds > math.MaxInt32 {
		return s, opts, usagef("--min-ready-seconds %d: more than %d", o.minReadySeconds, math.MaxInt32)
	}
	s.TargetRevision, s.Replicas = o.target, o.replicas
	if s.MaxUnavailable, err = intOrString("max-unavailable", o.maxUnavailable); err != nil {
		return s, opts, err
	}
	if s.MaxSurge, err = intOrString("max-surge", o.maxSurge); err != nil {
		return s, opts, err
	}
	if s.LatestRatio, err = intOrString("latest-ratio", o.latestRatio); err != nil {
		return s, opts, err
	}
	s.History = splitList(o.history)
	s.Columns = splitList(o.columns)
	if opts.Labels, err = choice("labels", o.labels, []string{"default", "kthena"},
		[]rollout.PodLabels{rollout.DefaultLabels, rollout.KthenaLabels}); err != nil {
		return s, opts, err
	}
	if o.revisionLabel != "" {
		opts.Labels.Revision = o.revisionLabel
	}
	if o.gangLabel != "" {
		opts.Labels.Gang = o.gangLabel
	}
	if o.columnLabel != "" {
		opts.Labels.Column = o.columnLabel
	}
	opts.Labels.Index = o.indexLabel
	if s.Mode != rollout.Gang {
		opts.Labels.Gang = ""
	}
	if s.Mode == rollout.Rolling {
		opts.Labels.Column = ""
	}
	if s.Mode == rollout.Gang && opts.Labels.Gang == "" {
		return s, opts, usagef("--mode gang needs --gang-label (or --labels kthena)")
	}
	if s.Mode == rollout.Group && opts.Labels.Column == "" {
		return s, opts, usagef("--mode group needs --column-label (or --labels kthena)")
	}
	if s.Mode == rollout.Gang && len(s.Columns) > 0 {
		if opts.Labels.Column == "" {
			return s, opts, usagef("--mode gang with --columns needs --column-label (or --labels kthena)")
		}
		opts.Columns = s.Columns
	}
	opts.MinReadySeconds = int32(o.minReadySeconds)
	return s, opts, nil
}

// countReplicas is the replica count found: per column in group mode (the largest).
func countReplicas(replicas []rollout.Replica, mode rollout.Mode) int {
	if mode != rollout.Group {
		return len(replicas)
	}
	per := map[string]int{}
	most := 0
	for _, r := range replicas {
		per[r.Column]++
		most = max(most, per[r.Column])
	}
	return most
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
