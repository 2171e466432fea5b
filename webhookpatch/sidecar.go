package webhookpatch

import (
	"fmt"
	"strconv"
	"strings"
)

// SidecarMode is how [Injector.EnsureSidecar] makes a container start before, and run
// beside, the containers it serves. The empty mode is not a mode: pick one with
// [SidecarModeFor].
type SidecarMode string

const (
	// SidecarNative appends the sidecar to initContainers with restartPolicy Always
	// (Kubernetes native sidecars, on by default from 1.29).
	SidecarNative SidecarMode = "Native"
	// SidecarLaunchPriority puts the sidecar first in containers and sets
	// [LaunchPriorityAnnotation] to "Ordered", so OpenKruise starts it first.
	SidecarLaunchPriority SidecarMode = "LaunchPriority"
)

// LaunchPriorityAnnotation is OpenKruise's container launch priority annotation.
const LaunchPriorityAnnotation = "apps.kruise.io/container-launch-priority"

// nativeSidecarMinorVersion is the first Kubernetes 1.x minor version that enables
// native sidecars by default (see DESIGN.md for why 1.28 is not).
const nativeSidecarMinorVersion = 29

// SidecarModeFor returns the sidecar mode for a cluster version such as "v1.29.3",
// "1.28", or "v1.30.0-eks-1234": [SidecarNative] from 1.29 on, [SidecarLaunchPriority]
// before. Kubernetes 1.28 has native sidecars behind a feature gate that is off by
// default, and its API server then drops the container's restartPolicy, which would
// leave the sidecar blocking the pod's start for ever; so 1.28 gets launch priority.
func SidecarModeFor(kubeVersion string) (SidecarMode, error) {
	v := strings.TrimPrefix(strings.TrimSpace(kubeVersion), "v")
	majorStr, rest, ok := strings.Cut(v, ".")
	if !ok {
		return "", fmt.Errorf("kubernetes version %q: want major.minor[.patch]", kubeVersion)
	}
	minorStr := rest
	if i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorStr = rest[:i]
	}
	major, err1 := strconv.Atoi(majorStr)
	minor, err2 := strconv.Atoi(minorStr)
	if err1 != nil || err2 != nil || major < 0 || minor < 0 || minorStr == "" {
		return "", fmt.Errorf("kubernetes version %q: want major.minor[.patch]", kubeVersion)
	}
	if major > 1 || (major == 1 && minor >= nativeSidecarMinorVersion) {
		return SidecarNative, nil
	}
	return SidecarLaunchPriority, nil
}
