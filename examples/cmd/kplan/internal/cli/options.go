package cli

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// options are every command's flag values.
type options struct {
	files  stringList
	output string
	now    timeFlag
	// warnings are printed on stderr after a successful run.
	warnings []string

	// ranktable and patch
	templatesNamespace string
	owner              string
	expect             stringList
	order              string
	timeout            time.Duration
	timestamp          string
	configMapsOnly     bool
	ownerLabel         string
	singleGroup        bool

	// rollout
	mode, target                   string
	replicas                       int
	maxUnavailable, maxSurge       string
	latestRatio                    string
	versionOrder, history, columns string
	labels                         string
	revisionLabel, gangLabel       string
	columnLabel, indexLabel        string
	minReadySeconds                int
	simulate                       bool
	maxSteps                       int
	role                           string

	// flags is the parsed command line (to tell flags given from defaults).
	flags *flag.FlagSet

	// revision, rdma and patch
	set, pod, node, model   string
	kubeVersion             string
	sidecarImage, waitImage string
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// timeFlag is an RFC 3339 time; unset means the current time.
type timeFlag struct {
	t   time.Time
	set bool
}

func (f *timeFlag) String() string {
	if !f.set {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *timeFlag) Set(v string) error {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 time like 2025-02-14T17:51:48Z")
	}
	f.t, f.set = t, true
	return nil
}

// Time returns the flag's time, or the current time when it was not given.
func (f *timeFlag) Time() time.Time {
	if f.set {
		return f.t
	}
	return time.Now().UTC().Truncate(time.Second)
}

// choice reads an enumerated flag: the value of names[i] is values[i].
func choice[T any](flagName, value string, names []string, values []T) (T, error) {
	if i := slices.Index(names, value); i >= 0 {
		return values[i], nil
	}
	var zero T
	want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	return zero, usagef("--%s %q: want %s", flagName, value, want)
}

// intOrString parses "3" or "25%" ("" is nil).
func intOrString(flagName, v string) (*intstr.IntOrString, error) {
	if v == "" {
		return nil, nil
	}
	x := intstr.Parse(v)
	if x.Type == intstr.String && !strings.HasSuffix(v, "%") {
		return nil, usagef("--%s %q: want an integer or a percent like 25%%", flagName, v)
	}
	return &x, nil
}
