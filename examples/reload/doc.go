// Package reload is the ConfigMapSet reload agent: the node side of package revision,
// run as the reload sidecar that the example operator's webhook injects into every pod
// a ConfigMapSet selects (command examples/cmd/configmapset-reload).
//
// # Overview
//
// The webhook (revision.Inject) gives the sidecar the pod's wanted revision through
// the downward API (resolved when the container starts), the hub ConfigMap as a
// volume, the shared emptyDir to write into, the set's name and the pod's name and
// namespace. The agent:
//
//  1. reads the wanted revision's files from the hub (the volume's file, or the hub
//     ConfigMap from the API server while the kubelet has not refreshed the volume
//     yet) and writes them with WriteAtomic, as the kubelet's atomic writer updates
//     ConfigMap volumes: a timestamped directory, then one rename of the ..data
//     symlink, so a reader never sees half a revision;
//  2. refuses a revision holding a file name that would leave the directory (or
//     collide with the writer's own ..-names): nothing is written and the pod is
//     not marked;
//  3. reports the revision it serves: once revision.MarkCurrent allows it (the pod
//     is ready and every container that had to restart did), it patches the pod's
//     currentRevision annotations, with the pod's UID. The operator's revision.Plan
//     then counts the pod updated, and the set's status completes
//     (currentRevision = updateRevision, updatedReadyPods = matchedPods). That
//     annotation (revision.Keys.CurrentRevision) is the data revision the pod
//     serves: a ModelServing that names the set (spec.configMapSet) reads exactly
//     it, and counts the pod out of service from when it asks for another
//     revision until this report;
//  4. carries out revision.Restarts for itself: when the pod wants another revision
//     (the partition moved it forward or back) or Restarts lists the sidecar, it
//     exits; the kubelet restarts it (a native sidecar restarts whatever its exit
//     code; before Kubernetes 1.29 the pod's restartPolicy must be Always) and the
//     downward API resolves the new revision.
//
// RBAC: the agent runs as its pod's ServiceAccount. It needs get and patch on pods,
// get on its set's hub ConfigMap and get on its ConfigMapSet;
// examples/config/reload/role.yaml is a Role granting exactly that (hub and set by
// name), and the operator's tests run the agent under it, with the token the kubelet
// mounts into the pod. Pods cannot be named in a Role, so the Role's RoleBinding is
// the parameter of the ValidatingAdmissionPolicy configmapset-reload-agent
// (examples/config/rbac/policies.yaml): that ServiceAccount may change only the pod
// whose bound token it presents, and only the set's currentRevision annotations. The
// pod's other containers share the ServiceAccount, so they can do the same, to their
// own pod only.
//
// # Restarting injected containers
//
// With restartInjectedContainers, revision.Restarts also lists the containers that
// mount the set's volume once the sidecar runs the new revision. Kubernetes has no
// API to restart a single container; the set's spec.updateStrategy.restartMethod
// says who does it.
//
// Signal (the default): the agent restarts them itself (Signaller). revision.Inject
// made the pod share one process namespace and set revision.EnvContainerName to each
// injected container's name, so the agent, reading the proc file system (-proc,
// default /proc), finds each container's main process: the earliest-started process
// carrying the marker in /proc/<pid>/environ (or the container's ID from the pod
// status in /proc/<pid>/cgroup, readable for every process) whose parent does not
// carry it, so neither its children nor a later kubectl exec session. It sends that
// process SIGTERM and logs it ("sent SIGTERM to container main (pid 42, ...)"); the
// container exits and the kubelet restarts it (restartPolicy Always, or a native
// sidecar). It never signals a process that started after the wanted revision's
// timestamp, and one process once per run, so its own restarts do not restart a
// container twice. When every listed container runs again and the pod is ready,
// step 3 marks the pod current.
//
// When it cannot restart a container it logs why, once, and waits:
//
//   - the pod does not share its process namespace (created before the set
//     restarted injected containers): re-create the pod. The set's Complete
//     condition (revision.Plan's waiting reason for the pod) says so too;
//   - no visible process carries the marker or the container's ID;
//   - the kernel refused the signal (EPERM): the container runs as another user.
//
// The signal path trades isolation for needing nothing outside the pod:
//
//   - readiness: the container restarts, so the pod is not ready meanwhile; it was
//     counted unavailable since it was asked for the revision, so maxUnavailable
//     bounds how many pods do this at once;
//   - PID visibility: every container of the pod sees the others' processes, and
//     for processes of its own user their environment and /proc/<pid>/root (their
//     files); pause, not the application, is PID 1;
//   - security context: the operator runs the sidecar non-root with every
//     capability dropped (the restricted Pod Security Standard). Signalling another
//     process needs the same user ID or CAP_KILL, and reading its environment the
//     same user or CAP_SYS_PTRACE, so the operator runs the sidecar as the one
//     non-root user the injected containers declare (runAsUser of the containers or
//     the pod), else as 65532: declare the user of the injected containers.
//     CAP_KILL is not allowed by the restricted standard and a non-root process does
//     not keep an added capability (Kubernetes sets no ambient capabilities), so
//     for containers of other users the sidecar would have to run as root (the
//     baseline standard allows KILL).
//
// External: something outside the pod restarts the containers and the agent waits.
// A node daemon does, for each container name Restarts returns, in order, waiting for
// each to run again:
//
//   - with OpenKruise installed, create
//     apps.kruise.io/v1alpha1 ContainerRecreateRequest
//     {metadata: {namespace: <pod namespace>, generateName: <pod name>-},
//     spec: {podName: <pod name>, containers: [{name: <container>}],
//     strategy: {failurePolicy: Fail, orderedRecreate: true}}}
//     (kruise-daemon on the pod's node stops the container, the kubelet starts it);
//   - without it, on the pod's node, CRI RuntimeService.StopContainer
//     (runtime.v1.StopContainerRequest{container_id: <status.containerStatuses[].containerID
//     without its "containerd://" prefix>, timeout: <terminationGracePeriodSeconds>}),
//     after which the kubelet restarts the container as the pod's restartPolicy says.
//
// Recreating the whole pod under the budget is the third way; the controller does
// not do it (see revision's DESIGN.md for what it would take).
//
// # Differences from the design
//
//   - The design's Kruise daemon restarts the reload sidecar, the injected
//     containers and marks the pod current; here the sidecar does all three
//     (exiting to restart itself, signalling the others), so a cluster without
//     OpenKruise completes every rollout. It needs the RBAC above and a shared
//     process namespace instead of a privileged daemon.
//   - The hub is read from the API server when the ConfigMap volume lags behind;
//     the design reads only the mounted hub.
package reload
