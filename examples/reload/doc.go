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
//     (currentRevision = updateRevision, updatedReadyPods = matchedPods);
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
// mount the set's volume once the sidecar runs the new revision. A container cannot
// restart another one, and Kubernetes has no API to restart a single container: the
// agent logs the list and waits, and a node daemon must do what Kruise's daemon does,
// for each container name Restarts returns, in order, waiting for each to run again:
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
// When every listed container runs again (started after the wanted revision's
// timestamp) and the pod is ready, the agent marks the pod current as in step 3.
//
// # Differences from the design
//
//   - The design's Kruise daemon restarts the reload sidecar and marks the pod
//     current; here the sidecar does both for itself (exiting to restart), so a
//     cluster without OpenKruise completes rollouts that do not restart injected
//     containers. It needs the RBAC above instead of a privileged daemon.
//   - The hub is read from the API server when the ConfigMap volume lags behind;
//     the design reads only the mounted hub.
package reload
