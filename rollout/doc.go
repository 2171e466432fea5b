// Package rollout plans rolling, gang and group rolling updates, rollback and
// recovery of abstract replicas: one reconcile at a time, as pure functions.
//
// # Overview
//
// A [Replica] is what a rollout schedules: one pod, or a gang replica (a row of
// member pods, one model pipeline split in partitions) that is created, updated
// and deleted as a whole, optionally in a Column (group mode). A controller builds
// replicas from what it observes (or from pods with [FromPods], which reads
// everything [Plan] and [PlanRecover] use, recovery's annotations included),
// calls [Plan] with a [Strategy] once per reconcile, carries out the returned
// [Step] and calls again. [PlanRecover] replaces failed replicas node by node
// without disturbing the rollout, and [PlanLockstep] advances several roles
// (prefill, decode) together. Package rollout/rollouttest holds rapid generators,
// a simulator with failure injection and invariant checkers for testing
// controllers and strategies against the same rules.
//
//   - Inputs are never modified; the same replicas in any order give the same
//     result; there is no clock (recovery takes now) and no randomness.
//   - Bad input returns an error naming the replica and field.
//   - A step is carried out as written: it names every pod to delete or update
//     ([Delete].Pods, [Update].Pods) and every pod to create as a slot a
//     controller names the pod from: a replica's index ([Replica].Index; a
//     [Create] takes the lowest free one) and, for a gang's member, its column
//     ([Member].Column; [Create].Members, [Update].Missing, [Repair].Missing).
//   - Every replica that still has to change but is left alone is listed in
//     [Step].Waiting with a reason ([ReasonBudget], [ReasonWindow], ...) and a
//     message. Reasons are UpperCamelCase constants of type kplan.Reason,
//     valid as a metav1.Condition's reason; [Step].Reason and Message say where
//     the whole rollout stands, to set a condition from as they are.
//
// # Algorithm
//
// Budgets ([ResolveBudget]): with n = Strategy.Replicas (rows per column in group
// mode), u = maxUnavailable rounded down and capped at n (Deployment's rule),
// s = maxSurge rounded up, a non-zero percent never resolving to 0, explicit 0/0
// rejected, and u = 1 when both are 0. The requested latest count is
// L = LatestRatio of n rounded up (nil = n). Percents may be fractional ("12.5%",
// "99.99%", as OpenKruise's partitions) and are computed exactly, where
// OpenKruise's float64 arithmetic can round one too high (1.1% of 3000 is 33,
// not 34).
// Revisions are ordered by Strategy.History, else by the integer generation before
// "-" ([CompareRevisions]). The stable revision (where replicas held back by
// LatestRatio run) is the newest non-target revision a replica runs, else the
// newest History entry other than the target. When there is none (every replica
// runs the target and History names no other revision: a workload held at a
// partition, or created with one), nothing can be held back: L = n, Plan creates
// missing replicas on the target and moves none, as a StatefulSet whose current
// and update revisions are equal does. With History naming an older revision,
// lowering LatestRatio still rolls replicas back to it.
//
// One pool of replicas (all replicas; one column in group mode) toward t target
// replicas, with floor = n - u available replicas:
//
//  1. Surplus (more than n replicas): delete replicas of the over-quota side
//     (target replicas beyond t, or old replicas beyond n - t), unavailable first;
//     an available one only while available - 1 >= floor. In group mode with old
//     rows kept (L < n), old replicas go in three passes so that every column
//     keeps the same old rows: those beyond their version's whole rows W_i first,
//     then other old versions' whole rows, then the stable revision's.
//  2. Missing (fewer than n): create them, at the target up to t, the rest at the
//     stable revision.
//  3. Move in place: while target replicas < t, update old replicas to the target
//     (while > t, update target replicas back to stable). Candidates go least
//     healthy first: updating an unavailable replica costs no budget, so a rollout
//     never deadlocks when more than u replicas are unready. An available one is
//     updated only while available - 1 >= floor. A gang whose members disagree on
//     the revision is finished at its own revision first.
//  4. Surge: if the floor stopped step 3, create up to min(short, n + s - total)
//     replicas at the revision moved to; step 1 deletes old ones once they are
//     available.
//
// Group mode adds whole rows. A row serves only when all its columns run one
// revision, so version i has W_i = min_j count_ij whole rows ([Step].Rows, with
// the available ones). When L < n old replicas stay, and with three or more
// revisions columns can hold different old ones (A = {3-c, 1-a}, B = {3-c, 2-b}:
// the second row serves nothing). Once a column's target count is L, replicas
// of an old version beyond W_i in that column (not the stable revision) move in
// place to the stable revision, within the budget step 3 left (3b); if the floor
// blocks them, replicas are created at the stable revision (surge) and step 1
// then deletes the replicas beyond their rows, never the stable replicas the
// rows need. Step.Complete requires every row whole (Σ_i W_i = n).
//
// Candidate order: least healthy (failed, not ready, ready but not available,
// available), then (group mode) replicas whose version has more available replicas
// in this column than in its weakest column (cutting those does not lower the
// version's serving capacity), then old version per [VersionOrder] (LessFirst:
// the version with the least availability, min over columns, and on ties the
// newest, that is the second-newest revision overall; LatestFirst: second-newest;
// OldFirst: oldest), then [CompareReplicas]: priority, deletion cost, name in
// natural order.
//
// Rolling mode plans one pool with t = L. Gang mode is rolling mode over gangs: a
// gang's state is its worst member's ([Replica.Effective]), and an [Update] names
// every member: the pods it updates and the columns of the missing ones it
// creates. A member whose pod is missing or terminating makes its gang
// unavailable; a gang whose present members are all terminating is being
// deleted and is ignored, like a terminating pod. Every gang Plan counts that
// has missing members and that the step neither updates nor deletes gets a
// [Repair] creating them at the gang's own revision, whatever its revision, the
// budget and L: the gang is unavailable, so this costs no budget, and it adds
// no replica, so it takes no surge. Terminating members are repaired once they
// are gone. Group mode (kube-sharding group rolling) plans each column j as a
// pool. For version i, AvailableRatio_ij = available_ij / n and
// TargetRatio_i = min_j AvailableRatio_ij. The latest version's window advances
// by one step, StepRatio = u / n (s / n when u is 0):
//
//	g   = min(L, min_j latestAvailable_j + step)   (g = L once no latest_j < L)
//	t_j = max(latest_j, g)   while moving forward (latest_j <= L)
//	t_j = L                  when the ratio was lowered (latest_j > L): the window
//	                         slides backward and target replicas return to stable
//
// so Σ_i TargetRatio_i <= 1 holds (each column has n rows) and every column keeps
// available_j >= n - u.
//
// Data releases: a replica may carry the revision of the data it serves (a
// search index, a model, a LoRA adapter: [Replica].DataRevision) beside its pod
// revision, and Strategy.TargetDataRevision releases data apart from pods, in
// place, under the same availability budget, per pool:
//
//  1. Pods are planned first, as above. Among candidates of one old version,
//     replicas whose data is stale go first, and every replica updated for its
//     pod takes the target data in the same [Update] (DataFrom, DataTo): a
//     replica under both changes goes down once and counts once.
//  2. Then data alone (an Update with From == To): stale replicas in the same
//     order, an unavailable one at no cost, an available one only while
//     available - 1 >= floor. While the pool still has pod moves pending (held by
//     the budget or the group window), a replica whose pod will move later waits
//     to take its data then, so no replica is taken down twice.
//
// The floor counts a replica down once whatever changes, so pod and data
// releases together keep available >= min(available before, n - u). Data moves
// only in place, so a data release needs u >= 1 (Plan rejects u = 0).
//
// Slots: every replica created (a Create, a recovery [Replacement]) gets the
// lowest index of its pool (its column in group mode) that no replica holds and
// no earlier create of the step takes, as a StatefulSet gives a new pod the
// lowest free ordinal. A terminating replica holds none: a create in its place
// waits until its pods, whose names it will take, are gone. A gang is created
// with a member in each of the strategy's columns.
//
// Recovery ([PlanRecover]) runs beside Plan, on the same replicas. A replica F
// is failed when it is Failed or Lost (a gang: any member), or not ready and
// healthy for StartTimeout, or (a gang) one member has been missing or not ready
// for GangMemberTimeout ([FailureReason]). Then, per reconcile:
//
//	start a replacement R for F   if F has none and inFlight < MaxParallel and
//	                              started(now-Window, now] < MaxPerWindow
//	swap R in (F.SwappedAt = now) if R is serving and F is still failed: a
//	                              gang's R has as many members as F, every one
//	                              present, ready and healthy
//	cancel R                      if R failed, or F is no longer failed
//	release F                     when now - F.SwappedAt >= ReleaseDelay
//
// A gang is always replaced whole: its replacement lists every member, and a
// gang is swapped only once all of them serve. A replica that is not failed is
// never swapped out. Under DeleteThenCreate F is released when R starts;
// NoRecover only reports, and freezes recovery another strategy started. Plan counts F in place of R
// until the swap and touches neither, so recovery never spends the rolling
// budget.
//
// Lockstep ([PlanLockstep]) moves roles r with final target counts F_r and steps
// s_r through S = max_r ceil(F_r / s_r) steps: at step k role r runs
// T_r(k) = ceil(k F_r / S) target replicas (LeaderWorkerSet's rule, so a small
// role beside a large one advances from the first step); the next step starts
// when every role has T_r(k) available, and each role is planned by Plan with
// LatestRatio T_r(k+1), so old+new <= n_r + surge_r per role. Replicas a role
// lacks (fresh deploy, scale-up) are created at the target at once, up to F_r.
// Old replicas drain in lockstep: at step k role r keeps
// O_r(k) = n_r - floor(k F_r / S) of them (at least 1 until step S), capped at
// n_r + surge_r - T_r(k+1); it surges where Plan would update in place below
// that share.
//
// # Invariants
//
// These hold for every Step (tested with rapid at 1000 cases per property and
// over every state of small scopes with rollouttest.Exhaustive, and checkable in
// your own tests with rollouttest.Check):
//
//   - Availability: after the step's actions, available >= min(available before,
//     n - u), per column in group mode, counting a replica whose pod, data or
//     both change once. Plan never takes availability below the floor, and never
//     lowers it at all when it already is below.
//   - Surge: replicas after the step <= max(replicas before, n + s), per column.
//   - Gangs: an update moves every member of a gang, and creates its missing
//     ones; every other gang Plan counts (recovery's aside) that lacks members
//     and is not deleted is repaired at its own revision.
//   - Group mode: the latest version's count never regresses while moving forward
//     and never exceeds max(L, what it already was).
//   - Progress: with no failures, replicas becoming available one reconcile
//     after they are updated, created or repaired, and deleted pods gone one
//     reconcile after they are deleted (graceful deletion), a rollout (group
//     mode included) reports Complete, from any starting state, with or without
//     a data release under way, within (k = ceil(n / step), step =
//     [Budget.Step]):
//     k + 2 reconciles when the caller updates pods in place, plus 1 when a
//     gang member is still terminating at the start (its gang is repaired only
//     once the pod is gone), plus 2 in group mode when L < n (making the old
//     rows whole may take a surge and a deletion);
//     2k + 2 when the caller updates by deleting pods and creating them again
//     once they are gone (each batch waits a reconcile for its pods to go, and
//     then creates or repairs), plus 1 in group mode when L < n.
//     The property tests check these bounds (rollouttest.ProgressBound is the
//     larger) and find each part reached.
//   - Group mode: a Complete step has whole rows: every version has as many
//     replicas in each column.
//   - Rollback: setting TargetRevision back, or lowering LatestRatio, converges the
//     same way.
//   - Recovery: a failed replica is never released before its replacement is
//     swapped in ready (CreateThenDelete); quotas are never exceeded; recovery
//     never uses the rolling budget.
//
// # Differences from the design
//
//   - kube-sharding releases pod and data versions of a replica separately
//     "while maxUnavailable holds". Here one Plan call plans both under one
//     budget; pods take the budget first and data the rest. Data has no ratio
//     (every replica gets TargetDataRevision) and moves only in place, never by
//     surge; replicas Plan creates load the target data.
//   - kube-sharding rounds percents up from .31; here maxUnavailable rounds down,
//     maxSurge and LatestRatio round up, and a non-zero percent is at least 1.
//   - When both budgets are 0 after rounding, kube-sharding sets surge to 1;
//     here maxUnavailable becomes 1 (Kubernetes' rule). Explicit 0/0 is an error.
//   - Group rolling's constraints are restated. The design writes
//     Σ_i TargetRatio_i < 1.0 and Σ_i AvailableRatio_ij >= MaxUnavailable; read
//     literally the pair cannot both hold through a rollout: when the latest
//     version reaches 100% the targets sum to exactly 1, and the second bound
//     would let a column drop to MaxUnavailable available. Here they are
//     Σ_i TargetRatio_i <= 1 and, per column, available_j >= n - u (the
//     available ratio stays at least 1 - MaxUnavailable), as Algorithm states.
//   - Revisions outside History and without a generation are ordered by name
//     (older than all others) instead of being rejected.
//   - Lists in a Step are in the order replicas were chosen, not sorted by name:
//     that order is total and deterministic, and saves a second sort.
//   - Recovery takes the caller's record of earlier replacement start times
//     (RecoverPolicy.Started) for the per-window quota, since a pure function has
//     no memory. Likewise a gang member's "missing since" is the caller's
//     observation (Member.State.UnreadySince; [FromPods] takes it as
//     PodOptions.MissingSince), compared with GangMemberTimeout. Which replica a
//     replacement replaces, and when a replica was swapped out, are pod
//     annotations the caller writes and [FromPods] reads ([PodAnnotations]).
//   - State has Lost besides Failed (node lost, gang member gone for good), so
//     recovery reports why; both mean "replace".
//   - Errors are plain errors naming the replica and field ("replica r-3:
//     revision: must not be empty"), not a field.ErrorList: a plan stops at the
//     first bad replica, and callers of a planner have no object path to report.
//   - Names sort in natural order ("r-9" before "r-10"), ties in leading zeros
//     included.
//   - A generation is ASCII digits only ("+5-a" and " 5-a" have none).
//   - Size limits: [MaxReplicas] replicas per call, [MaxNameLength] bytes per name.
//
// # Example
//
//	maxUnavailable := intstr.FromString("20%")
//	step, err := rollout.Plan(replicas, rollout.Strategy{
//		Mode:           rollout.Rolling,
//		TargetRevision: "2-b",
//		Replicas:       10,
//		MaxUnavailable: &maxUnavailable,
//	})
//	// delete step.Delete's pods, update step.Update's, create step.Create's
//	// and step.Repair's in their slots; call again next reconcile.
package rollout
