package webhookpatch

import (
	"fmt"
	"strconv"
	"strings"
)

// SidecarMode is how [Injector.EnsureSidecar] makes a container start before, and run
// beside, the containers it serves.
type SidecarMode int

const (
	// SidecarNative appends the sidecar to initContainers with restartPolicy Always
	// (Kubernetes native sidecars, on by default from 1.29).
	SidecarNative SidecarMode = iota + 1
	// SidecarLaunchPriority puts the sidecar first in containers and sets
	// [LaunchPriorityAnnotation] to "Ordered", so OpenKruise starts it first.
	SidecarLaunchPriority
)

// LaunchPriorityAnnotation is OpenKruise's container launch priority annotation.
const LaunchPriorityAnnotation = "apps.kruise.io/container-launch-priority"

// String returns "native" or "launch-priority".
func (m SidecarMode) String() string {
	switch m {
	case SidecarNative:
		return "native"
	case SidecarLaunchPriority:
		return "launch-priority"
	}
	return "SidecarMode(" + strconv.Itoa(int(m)) + ")"
}

// NativeSidecarMinorVersion is the first Kubernetes 1.x minor version that enables
// native sidecars by default. In 1.28 the SidecarContainers gate is off by default and
// the API server silently drops the container restartPolicy, which leaves the sidecar
// blocking initialisation forever, so 1.28 gets [SidecarLaunchPriority].
const NativeSidecarMinorVersion = 29

// SidecarModeFor returns the sidecar mode for a cluster version such as "v1.29.3",
// "1.28", or "v1.30.0-eks-1234": native from 1.29 on, launch priority before.
func SidecarModeFor(kubeVersion string) (SidecarMode, error) {
	v := strings.TrimPrefix(strings.TrimSpace(kubeVersion), "v")
	majorStr, rest, ok := strings.Cut(v, ".")
	if !ok {
		return 0, fmt.Errorf("kubernetes version %q: want major.minor[.patch]", kubeVersion)
	}
	minorStr := rest
	if i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorStr = rest[:i]
	}
	major, err1 := strconv.Atoi(majorStr)
	minor, err2 := strconv.Atoi(minorStr)
	if err1 != nil || err2 != nil || major < 0 || minor < 0 || minorStr == "" {
		return 0, fmt.Errorf("kubernetes version %q: want major.minor[.patch]", kubeVersion)
	}
	if major > 1 || (major == 1 && minor >= NativeSidecarMinorVersion) {
		return SidecarNative, nil
	}
	return SidecarLaunchPriority, nil
}
