// Package ranktable plans Ascend HCCL rank tables for the pods of a role or a
// serving group: it parses the pods' device annotations, assigns rank ids, renders the
// table through a user template and returns the ConfigMaps a reconciler writes, plus
// the pod mutation a webhook applies so pods wait for and mount their table.
//
// # Overview
//
// A controller loads its templates once per ConfigMap version (LoadTemplate with the
// parser ConfigMap ParserConfigMapName names, or a TemplateCache keyed by UID and
// resourceVersion), then on every reconcile calls Plan (or Planner.Plan, which
// re-parses only changed pods) with the owner (NewOwner), its pods and the existing
// ranktable ConfigMaps, and applies the result:
//
//   - Result.ConfigMaps: one ConfigMap per group with kplan.ActionCreate,
//     kplan.ActionUpdate or kplan.ActionNone, then (when Input.Expected is set) the
//     owner's ranktable ConfigMaps of groups no longer expected with
//     kplan.ActionDelete;
//   - Result.Groups: per group Waiting (with the pods that lack the annotation and
//     the expected members that have no pod), Completed or Failed (with the error),
//     and a Reason (a kplan.Reason such as WaitingForAnnotations or
//     InvalidAnnotation) and Message a reconciler sets on a condition as they are;
//     one group's failure never blocks another;
//   - Result.Unmatched: the pods left out of every group, with a Reason and Message
//     (another namespace or controller, no ownerReference, a label the group needs
//     missing, a group Expected does not list);
//   - Result.Events: kplan.Events with the reasons RanktableConfigMapCreated,
//     RanktableConfigMapDeleted, RanktableGenerated, RanktableGenerationFailed and
//     PodRanktableAnnotationMissing, each with a corev1.ObjectReference to the
//     owner, ConfigMap or pod it is about;
//   - Result.RequeueAfter: when to look again while a group waits.
//
// A Planner kept across reconciles makes the common reconcile cheap: only pods whose
// annotation (or anything else Plan reads from them) changed are parsed again, only
// their groups are built and rendered again, and an existing ConfigMap already found
// up to date at its resourceVersion is not compared again. Planner.Forget drops a
// deleted owner's state.
//
// Pods belong to the owner through their controller ownerReference. kthena finds a
// ModelServing's pods by label instead; set Grouping.OwnerLabel to
// LabelModelServingName to group such pods, which need no ownerReference.
//
// Pods are grouped by kthena's serving-group label and, at role level, role id (or
// role) label; Grouping names other labels. A pod without the labels its level needs
// is unmatched, never a group of its own. An owner whose pods carry no serving-group
// label (a StatefulSet) sets Grouping.SingleGroup: all its pods are one serving group.
//
// A mutating webhook names the pod's ConfigMap with PodConfigMapName, calls Inject
// on a copy of the pod and returns webhookpatch.Diff of the two. Inject mounts the
// table in the inference engine's containers (EngineContainers: those that request
// Ascend NPUs), not in sidecars; it applies everything or leaves the pod as it was,
// and reports what it changed as a webhookpatch.Result.
//
// Building blocks: Template.ParsePod and Template.ParseAnnotation (one pod), Build
// (rank assignment), Template.Render (one table), ResolveLevel, KeyOf and
// ConfigMapName (grouping and naming), EngineContainers and IsNPUResource (which
// containers get the table), the template library (LibraryConfigMaps,
// LoadLibraryTemplate).
//
// # Algorithm
//
// Parsing: the annotation named by the template (default ascend.com/ranktable) is
// decoded by a built-in parser (BuiltinRanktableJSON, BuiltinAscendDevicePlugin) or by
// running the parser template on the annotation string and decoding the YAML it prints
// (keys podName, serverId, hostIp, superPodId, serverIndex and devices: a list of
// deviceId, deviceIp and superDeviceId; an unknown key is an error). Parser templates
// receive the annotation string as dot, as in the design, and can call podIP,
// nodeName, podName and podNamespace for the pod's values (the pod's IP and node name
// also reach ranktable templates as Server.ContainerIp and Server.NodeName).
// Annotations over Kubernetes' limit for all annotations of an object (256 KiB,
// k8s.io/apimachinery/pkg/api/validation.TotalAnnotationSizeLimitB) are rejected
// unread.
//
// Building: pods are grouped by server id (pods on one server are merged); servers are
// ordered by the Order policy, devices inside a server numerically, and rank ids are
// assigned 0..n-1 in that order:
//
//	rank_id(server s, device position i) = sum(len(devices of servers before s)) + i
//	cluster_id = rank_id + 1
//
// Natural (default) compares digit runs by value; Lexicographic compares bytes (the
// design); PodIndex orders servers by the pods' hccl/rankIndex annotation, then role
// id, entry pod first, then pod name.
//
// Rendering: the ranktable template runs through text/template with sprig's functions
// (see Template budget for what is removed and changed). Library templates whose text
// is unchanged render faster, with byte-identical output. The output must be valid
// JSON of at most MaxOutputBytes (default 1 MiB, the ConfigMap limit).
//
// # Template budget
//
// Ranktable and parser templates are written by cluster users, so every execution of
// one runs under limits, and exceeding any of them fails that execution (the group is
// Failed, other groups and owners are planned as usual) with an error that names the
// template and the limit and wraps ErrBudgetExceeded or ErrOutputTooLarge:
//
//   - Output: MaxOutputBytes of Input or RenderOptions (default DefaultMaxOutputBytes,
//     1 MiB) for a table; 256 KiB (the annotation limit) for a parser template's
//     YAML.
//   - Work: LoadOptions.MaxTemplateWork (default DefaultMaxTemplateWork, 5,000,000
//     units). Every function call is charged, plus what it reads (a unit per 64 bytes),
//     walks (a unit per element) or compares (uniq, without: elements squared); every
//     range is charged its iterations times the size of its body before it starts (a
//     map range also its key sort); every template call the size of the called
//     template. Rendering a 1024-pod x 16-NPU table through the MindIE template takes
//     about 0.5 million units.
//   - Value bytes: LoadOptions.MaxTemplateValueBytes (default
//     DefaultMaxTemplateValueBytes, 16 MiB): every string, list and dict a function
//     builds is charged, with overflow-safe arithmetic, before it is built (an upper
//     bound: printf counts its widths and precisions for every element, replace and
//     regexReplaceAll every possible match, indent every line), and never given back.
//   - Single results: until, untilStep and seq at most 65,536 elements; repeat, indent
//     and nindent at most 1 MiB; fromJson at most 256 KiB of input; regular
//     expressions at most 10,000 instructions.
//   - Shape: no value nests deeper than 64 levels (checked wherever a value is
//     walked: printed, formatted, encoded, copied, compared, decoded); set, merge and
//     mergeOverwrite refuse to make a dict contain itself, so values have no cycles;
//     a template may not call itself, directly or through others (a load error); a
//     range over a channel or a function is an error.
//
// Templates see a copy of the Table (sprig's sortAlpha, which sorts its argument in
// place, is replaced by one that sorts a copy), so Render never changes its input and
// one table may be rendered concurrently. keys and values return their results in key
// order (sprig's follow Go's random map order).
//
// Removed functions (a template naming one fails to load, with the reason): the clock
// and time zone (now, ago, date, dateInZone, date_in_zone, dateModify, date_modify,
// mustDateModify, must_date_modify, durationRound, htmlDate, htmlDateInZone, toDate,
// mustToDate, unixEpoch), randomness (randAlphaNum, randAlpha, randAscii, randNumeric,
// randBytes, randInt, shuffle, uuidv4, bcrypt, htpasswd, genPrivateKey, genCA,
// genSelfSignedCert, genSignedCert, encryptAES), the environment, network and
// operating system (env, expandenv, getHostByName, osBase, osClean, osDir, osExt,
// osIsAbs), secrets of no use in a table (genCAWithKey, genSelfSignedCertWithKey,
// genSignedCertWithKey, buildCustomCert, decryptAES, derivePassword, which also takes
// 32 MiB per call), and wrapWith, whose output is not bounded by its input. Every
// other function of sprig's map is available, charged as above; text/template's
// print, printf, println, html, js, urlquery, eq, ne, lt, le, gt, ge and index are
// replaced by copies that charge their cost.
//
// # Invariants
//
//   - Rank ids are unique and contiguous from 0; every device of every pod appears once.
//   - Inputs are never changed; the same input in any order gives byte-identical
//     ConfigMaps; nothing depends on the clock (Timestamp is what the caller passes).
//   - A table is written only when the group has exactly its expected pods, all with
//     valid annotations; otherwise the file is empty, so a pod that goes away resets
//     the table and a new pod UID set regenerates it.
//   - An existing ConfigMap is updated only when its bytes, hash annotations or label
//     differ; a ConfigMap controlled by someone else is never touched.
//   - Planner.Plan returns exactly what Plan returns for the same input.
//
// # Differences from the design
//
// Where the design (the kthena ranktable proposal) is wrong for real consumers, this
// package follows them instead:
//
//   - Order: the design sorts server ids and device ids as strings, which puts device
//     "10" before "2" on 16-NPU A3 servers and "192.168.1.10" before "192.168.1.9".
//     The default is Natural; Lexicographic reproduces the design exactly. Both give
//     the design's table for the design's example.
//   - Names: "{ms}-{role}-ranktable" collides across serving groups and role
//     replicas; names include the serving group (without the owner prefix kthena puts
//     on it) and the role id, and are cut with a hash above 253 characters. A pod
//     without a serving-group label is unmatched rather than sharing a table with
//     other groups' pods; Grouping.SingleGroup gives the design's example (pods with
//     a role label only) its "{ms}-{role}-ranktable" name.
//   - Mounts: the design mounts the table in every app container; here only the
//     engine's containers (those that request Ascend NPUs, see EngineContainers) get
//     the mount and the env var, so a metrics or proxy sidecar does not.
//   - Clean-up: the design never deletes a table; here, given the expected groups,
//     the plan deletes the tables of groups no longer expected.
//   - Partial tables: the design document's code skips pods without an annotation
//     and renders what it has; here a table is rendered only when every expected pod
//     is ready (kthena's controller, too, waits for every current pod's annotation,
//     but not for pods that do not exist yet).
//   - Status: the design document's code never sets Status; here it is "completed",
//     as kthena's controller sets it.
//   - Clock: the design's Timestamp field would rewrite the ConfigMap on every
//     reconcile; here it is a caller-supplied value, empty by default.
//   - Templates: the design offers sprig's full map, including env and expandenv
//     (which would copy controller secrets into ConfigMaps) and random and clock
//     functions; here the hermetic map without those, fromJson/toJson that report
//     errors, size-capped until/seq/repeat/indent, and every execution under a
//     budget (see Template budget).
//   - Validation: the design validates nothing; here server ids (non-empty, at most
//     63 characters, no characters that need escaping), device ids (integers), device
//     IPs (real addresses: "-1" and placeholders rejected), duplicates and the 1 MiB
//     ConfigMap limit are checked, and errors name the pod and field.
//   - Wait container: the design waits for a non-empty file as root; here it also
//     waits while the table says "initializing", runs as non-root with a read-only
//     root filesystem, and the engine's env var is injected. Mounts never use subPath
//     (kubelet does not update subPath mounts).
//   - Wait image: the design's busybox:latest is pinned to busybox:1.36
//     (DefaultWaitImage): "latest" changes under a running cluster and implies
//     imagePullPolicy Always, a registry round trip for every pod start.
//   - Wait timeout: the design waits for ever; InjectOptions.WaitTimeout makes the
//     wait container exit 1 after that long, saying whether the file is missing or
//     still empty or initializing (0 keeps the design's behaviour).
//   - Status in templates: the design's extended template writes the literal
//     "status": "completed"; the library's mindie-extended writes
//     "{{ .Status }}" like the design's other templates, so a table rendered while
//     a group is still initializing says so and the wait container keeps waiting.
//   - ConfigMaps: kthena's parser ConfigMap names the annotation to read
//     (annotation-name), which is honoured; data keys kplan does not use (kthena's
//     init-container-image, init-container-name) are reported in Template.Warnings,
//     not rejected.
//   - Names from label values that are not valid in a ConfigMap name (upper case,
//     '_', spaces) are lowered and given a hash suffix, and every name is validated.
//   - pod-parser-template is optional (the design's simplified template omits it) and
//     defaults to BuiltinRanktableJSON; names starting "builtin:" select built-in
//     parsers that need no parser ConfigMap.
//   - New library templates (HCCL v1.2, vLLM-Ascend PD) use toJson instead of quote:
//     quote is Go's %q, which is not always valid JSON.
//   - Timeout: measured from the later of the ConfigMap's and the newest pod's
//     creation, so the library needs no clock and writes no timestamps.
//   - Size: a 1024-pod x 16-NPU table in the design's format is about 2 MiB, over the
//     ConfigMap limit; such a group fails with an error wrapping ErrOutputTooLarge
//     unless MaxOutputBytes is raised (for tests and benchmarks; the API server would
//     still reject it).
//
// # Limitations
//
//   - Device ids are checked to be integers in 0..65535, not against the number of
//     NPUs of the server.
//   - The template budget counts work, not time: a template using up
//     DefaultMaxTemplateWork stops within about a quarter of a second of CPU time (the
//     slowest of the hostile-template tests), so within about a second unless the
//     machine is oversubscribed. Templates still come from ConfigMaps in the templates
//     namespace; restrict who may write there.
//   - The Planner trusts resourceVersions: a pod or ConfigMap object changed without a
//     new resourceVersion (only possible for objects not from the API server) may be
//     taken as unchanged. Objects without a resourceVersion are always compared.
//
// # Example
//
//	// parserCM: the ConfigMap named ranktable.ParserConfigMapName(rtCM), or nil.
//	tmpl, err := ranktable.LoadTemplate(rtCM, parserCM, ranktable.LoadOptions{})
//	res, err := ranktable.Plan(ranktable.Input{
//		Owner: ranktable.NewOwner(ms, msGVK), Template: tmpl, Pods: pods, ConfigMaps: existing,
//		Expected: map[ranktable.GroupKey]int{{Group: "qwen-0", Role: "worker-0"}: 2},
//		Now: now, Timeout: 10 * time.Minute,
//	})
//	for _, cm := range res.ConfigMaps { /* cm.Action: create, update or delete cm.ConfigMap */ }
//
// The package's Example shows the whole flow, from a template and pods to the
// ConfigMaps and a pod's patch.
package ranktable
