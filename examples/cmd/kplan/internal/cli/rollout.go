package cli

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/manifest"
	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
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
such as the operator's during an in-place image update, is not True).
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

// simulation is a whole simulated rollout.
type simulation struct {
	Mode           string    `json:"mode"`
	TargetRevision string    `json:"targetRevision"`
	Replicas       int       `json:"replicas"`
	Budget         budgetOut `json:"budget"`
	Reconciles     int       `json:"reconciles"`
	Steps          []simStep `json:"steps"`
}

type simStep struct {
	Reconcile int      `json:"reconcile"`
	Complete  bool     `json:"complete,omitempty"`
	Update    []string `json:"update,omitempty"`
	Create    []string `json:"create,omitempty"`
	Delete    []string `json:"delete,omitempty"`
	Repair    []string `json:"repair,omitempty"`
	Waiting   int      `json:"waiting"`
	Latest    int      `json:"latest"`
	// Available and AtTarget count replicas after the step's actions, out of Total.
	Available int `json:"available"`
	AtTarget  int `json:"atTarget"`
	Total     int `json:"total"`
}

// Table prints the simulation as a table.
func (s simulation) Table() []byte {
	var b buffer
	fmt.Fprintf(&b, "%s rollout to %s: %d replicas, maxUnavailable %d, maxSurge %d\n",
		s.Mode, s.TargetRevision, s.Replicas, s.Budget.MaxUnavailable, s.Budget.MaxSurge)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RECONCILE\tUPDATE\tCREATE\tDELETE\tREPAIR\tWAITING\tLATEST\tAVAILABLE\tAT TARGET")
	for _, st := range s.Steps {
		if st.Complete {
			fmt.Fprintf(tw, "%d\tcomplete\t\t\t\t\t%d\t%d/%d\t%d/%d\n", st.Reconcile, st.Latest, st.Available, st.Total, st.AtTarget, st.Total)
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d/%d\t%d/%d\n", st.Reconcile, list(st.Update), list(st.Create), list(st.Delete),
			list(st.Repair), st.Waiting, st.Latest, st.Available, st.Total, st.AtTarget, st.Total)
	}
	_ = tw.Flush()
	return b.Bytes()
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
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
	sets := byKind(objs, "StatefulSet")
	if len(sets) > 1 {
		return nil, fmt.Errorf("%s: only one StatefulSet may be given, %s is another", sets[1], sets[0])
	}
	if len(sets) == 1 {
		if pods, podObjs, err = fromStatefulSet(sets[0], o, &strategy, pods, podObjs); err != nil {
			return nil, err
		}
	}
	var mss []*manifest.Object // the examples operator's, not kthena's
	for _, m := range byKind(objs, "ModelServing") {
		if m.APIVersion == servingv1.GroupVersion.String() {
			mss = append(mss, m)
		}
	}
	if len(mss) > 1 || len(mss) == 1 && len(sets) == 1 {
		return nil, fmt.Errorf("%s: only one StatefulSet or ModelServing may be given", mss[len(mss)-1])
	}
	if len(mss) == 1 {
		if pods, podObjs, err = fromModelServing(mss[0], o, &strategy, &opts, pods, podObjs); err != nil {
			return nil, err
		}
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
	out := stepOut{
		Mode: strings.ToLower(string(strategy.Mode)), TargetRevision: strategy.TargetRevision, Replicas: strategy.Replicas,
		Budget: budgetOut(step.Budget), Latest: step.Latest, Complete: step.Complete,
		Reason: string(step.Reason), Message: step.Message,
	}
	for _, w := range step.Waiting {
		out.Waiting = append(out.Waiting, waitOut{Replica: w.Replica, Reason: string(w.Reason), Message: w.Message})
	}
	for _, u := range step.Update {
		out.Update = append(out.Update, updateOut(u))
	}
	for _, c := range step.Create {
		out.Create = append(out.Create, createOut(c))
	}
	for _, d := range step.Delete {
		out.Delete = append(out.Delete, deleteOut(d))
	}
	for _, r := range step.Repair {
		out.Repair = append(out.Repair, repairOut(r))
	}
	return out, nil
}

// rolloutStrategy reads the strategy and pod options from the flags.
func rolloutStrategy(o *options) (rollout.Strategy, rollout.PodOptions, error) {
	var s rollout.Strategy
	var opts rollout.PodOptions
	switch o.mode {
	case "rolling":
		s.Mode = rollout.Rolling
	case "gang":
		s.Mode = rollout.Gang
	case "group":
		s.Mode = rollout.Group
	default:
		return s, opts, usagef("--mode %q: want rolling, gang or group", o.mode)
	}
	switch o.versionOrder {
	case "LessFirst":
		s.VersionOrder = rollout.LessFirst
	case "LatestFirst":
		s.VersionOrder = rollout.LatestFirst
	case "OldFirst":
		s.VersionOrder = rollout.OldFirst
	default:
		return s, opts, usagef("--version-order %q: want LessFirst, LatestFirst or OldFirst", o.versionOrder)
	}
	if o.replicas < 0 || o.minReadySeconds < 0 || o.maxSteps < 1 {
		return s, opts, usagef("--replicas and --min-ready-seconds must not be negative, --max-steps must be positive")
	}
	if o.minReadySeconds > math.MaxInt32 {
		return s, opts, usagef("--min-ready-seconds %d: more than %d", o.minReadySeconds, math.MaxInt32)
	}
	s.TargetRevision, s.Replicas = o.target, o.replicas
	var err error
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
	switch o.labels {
	case "default":
		opts.Labels = rollout.DefaultLabels
	case "kthena":
		opts.Labels = rollout.KthenaLabels
	default:
		return s, opts, usagef("--labels %q: want default or kthena", o.labels)
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

// fromStatefulSet takes the StatefulSet's pods, target revision, replicas and
// maxUnavailable (flags win).
func fromStatefulSet(obj *manifest.Object, o *options, s *rollout.Strategy, pods []*corev1.Pod, podObjs []*manifest.Object) ([]*corev1.Pod, []*manifest.Object, error) {
	sts := &appsv1.StatefulSet{}
	if err := obj.Decode(sts); err != nil {
		return nil, nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil || sts.Spec.Selector == nil || sel.Empty() {
		return nil, nil, obj.Errorf("spec.selector is missing or invalid")
	}
	var keptPods []*corev1.Pod
	var keptObjs []*manifest.Object
	for i, p := range pods {
		if p.Namespace == namespaceOf(obj) && sel.Matches(labelSet(p.Labels)) {
			keptPods, keptObjs = append(keptPods, p), append(keptObjs, podObjs[i])
		}
	}
	if s.TargetRevision == "" {
		s.TargetRevision = sts.Status.UpdateRevision
		if s.TargetRevision == "" {
			return nil, nil, obj.Errorf("status.updateRevision is empty: give --target")
		}
	}
	if s.Replicas == 0 {
		s.Replicas = 1
		if sts.Spec.Replicas != nil {
			s.Replicas = int(*sts.Spec.Replicas)
		}
	}
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; o.maxUnavailable == "" && ru != nil && ru.MaxUnavailable != nil {
		s.MaxUnavailable = ru.MaxUnavailable
	}
	if o.maxSurge == "" {
		zero := intOrZero()
		s.MaxSurge = &zero // StatefulSets never surge
	}
	return keptPods, keptObjs, nil
}

// fromModelServing takes the ModelServing's pods (one role's in Rolling and
// Lockstep mode), mode, labels, target revision, replicas, budgets, partition
// and minReadySeconds from servingv1.RolloutPools, the operator's mapping;
// flags given explicitly win.
func fromModelServing(obj *manifest.Object, o *options, s *rollout.Strategy, opts *rollout.PodOptions, pods []*corev1.Pod, podObjs []*manifest.Object) ([]*corev1.Pod, []*manifest.Object, error) {
	ms := &servingv1.ModelServing{}
	if err := obj.Decode(ms); err != nil {
		return nil, nil, err
	}
	if len(ms.Spec.Roles) == 0 {
		return nil, nil, obj.Errorf("spec.roles is empty")
	}
	if o.role != "" && !slices.ContainsFunc(ms.Spec.Roles, func(r servingv1.Role) bool { return r.Name == o.role }) {
		return nil, nil, usagef("--role %q: %s has no such role", o.role, obj)
	}
	switch ms.Spec.RolloutStrategy.Mode {
	case servingv1.GangMode, servingv1.GroupMode, servingv1.RollingMode, servingv1.LockstepMode, "":
	default:
		return nil, nil, obj.Errorf("spec.rolloutStrategy.mode %q is not Rolling, Gang, Group or Lockstep", ms.Spec.RolloutStrategy.Mode)
	}
	ms.Namespace = namespaceOf(obj)
	// Pods without a namespace are in the default one, as kubectl reads them.
	byPod := map[*corev1.Pod]*manifest.Object{}
	for i, p := range pods {
		byPod[p] = podObjs[i]
	}
	pools, err := servingv1.RolloutPools(ms, pods)
	if err != nil {
		return nil, nil, obj.Errorf("%v", err)
	}
	pool := pools[0]
	for _, pl := range pools {
		if o.role != "" && pl.Role == o.role {
			pool = pl
		}
	}
	keptPods := pool.Pods
	keptObjs := make([]*manifest.Object, len(keptPods))
	for i, p := range keptPods {
		keptObjs[i] = byPod[p]
		if keptObjs[i] == nil { // a copy ReadyByGates made: find its object by name
			for j, q := range pods {
				if q.Namespace == p.Namespace && q.Name == p.Name {
					keptObjs[i] = podObjs[j]
				}
			}
		}
	}
	set := map[string]bool{}
	o.flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	st := pool.Strategy
	s.Mode, s.Columns = st.Mode, st.Columns
	*opts = pool.Options
	if !set["target"] {
		s.TargetRevision = st.TargetRevision
		if s.TargetRevision == "" {
			return nil, nil, obj.Errorf("status.updateRevision is empty: give --target")
		}
	}
	if !set["history"] && st.History != nil {
		s.History = st.History
	}
	if !set["replicas"] {
		s.Replicas = st.Replicas
	}
	if !set["max-unavailable"] && st.MaxUnavailable != nil {
		s.MaxUnavailable = st.MaxUnavailable
	}
	if !set["max-surge"] && st.MaxSurge != nil {
		s.MaxSurge = st.MaxSurge
	}
	if !set["latest-ratio"] {
		s.LatestRatio = st.LatestRatio
	}
	if set["min-ready-seconds"] {
		opts.MinReadySeconds = int32(o.minReadySeconds)
	}
	return keptPods, keptObjs, nil
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

// MaxSimulatedPods bounds the pods a simulation may create, so a large replica count
// in the input cannot make the simulation run out of memory.
const MaxSimulatedPods = 10000

// simulate runs the rollout to completion in rollouttest's simulator. A gang it
// creates has a member in each of the strategy's columns, or without columns as
// many as the largest gang.
func simulate(strategy rollout.Strategy, replicas []rollout.Replica, maxSteps int) (simulation, error) {
	gangSize := len(strategy.Columns)
	if strategy.Mode == rollout.Gang && gangSize == 0 {
		for _, r := range replicas {
			gangSize = max(gangSize, len(r.Members))
		}
	}
	pods := strategy.Replicas
	switch strategy.Mode {
	case rollout.Gang:
		pods *= max(gangSize, 1)
	case rollout.Group:
		columns := map[string]bool{}
		for _, c := range strategy.Columns {
			columns[c] = true
		}
		for _, r := range replicas {
			columns[r.Column] = true
		}
		pods *= max(len(columns), 1)
	}
	if strategy.Replicas > MaxSimulatedPods || gangSize > MaxSimulatedPods || pods > MaxSimulatedPods {
		return simulation{}, fmt.Errorf("simulation: %d replicas (%d pods) is more than the %d pods kplan simulates", strategy.Replicas, pods, MaxSimulatedPods)
	}
	sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: strategy, Replicas: replicas, GangSize: gangSize}, rollouttest.NoFaults)
	out := simulation{Mode: strings.ToLower(string(strategy.Mode)), TargetRevision: strategy.TargetRevision, Replicas: strategy.Replicas}
	for range maxSteps {
		step, err := sim.Reconcile()
		if err != nil {
			return out, fmt.Errorf("simulation: %v", err)
		}
		out.Budget = budgetOut(step.Budget)
		st := simStep{Reconcile: sim.Reconciles, Complete: step.Complete, Waiting: len(step.Waiting), Latest: step.Latest}
		for _, u := range step.Update {
			st.Update = append(st.Update, u.Replica)
		}
		for _, c := range step.Create {
			st.Create = append(st.Create, c.Revision+"@"+slot(c.Column, c.Index))
		}
		for _, d := range step.Delete {
			st.Delete = append(st.Delete, d.Replica)
		}
		for _, r := range step.Repair {
			st.Repair = append(st.Repair, fmt.Sprintf("%s[%s]", r.Replica, strings.Join(r.Missing, " ")))
		}
		for _, r := range rollouttest.Counted(sim.Replicas) {
			st.Total++
			if rollouttest.Available(r) {
				st.Available++
			}
			if r.Revision == strategy.TargetRevision {
				st.AtTarget++
			}
		}
		out.Steps = append(out.Steps, st)
		out.Reconciles = sim.Reconciles
		if step.Complete {
			return out, nil
		}
		sim.Settle(nil)
	}
	return out, fmt.Errorf("simulation: not complete after %d reconciles (--max-steps)", maxSteps)
}

// slot is how a simulation table names a create's slot: its index, after its
// column when it has one (column/index).
func slot(column string, index int) string {
	if column == "" {
		return strconv.Itoa(index)
	}
	return column + "/" + strconv.Itoa(index)
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
