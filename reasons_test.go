package kplan_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplan-dev/kplan/internal/apilist"
)

// reasonConst matches a Reason constant in the API listing: in the root package its
// type is spelled Reason, elsewhere with the root's path.
var reasonConst = regexp.MustCompile(`^pkg (\S+), const (\w+) (?:github\.com/kplan-dev/kplan\.)?Reason = ("(?:[^"\\]|\\.)*")$`)

// TestEveryReasonIsAConditionReason finds every Reason constant every package exports
// (from the compiled API, so none is missed) and sets a metav1.Condition and an event
// reason from it as it is.
func TestEveryReasonIsAConditionReason(t *testing.T) {
	lines, err := apilist.List(".")
	if err != nil {
		t.Fatal(err)
	}
	perPackage := map[string]int{}
	seen := map[string]map[string]string{} // package -> value -> constant
	for _, l := range lines {
		m := reasonConst.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		pkg, name := m[1], m[2]
		value, err := strconv.Unquote(m[3])
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		perPackage[pkg]++
		t.Run(pkg+"."+name, func(t *testing.T) {
			cond := metav1.Condition{
				Type:               "Ready",
				Status:             metav1.ConditionFalse,
				ObservedGeneration: 1,
				LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
				Reason:             value,
				Message:            "m",
			}
			if errs := metav1validation.ValidateConditions([]metav1.Condition{cond}, field.NewPath("status", "conditions")); len(errs) > 0 {
				t.Errorf("%s = %q is not a condition reason: %v", name, value, errs.ToAggregate())
			}
			// events.k8s.io/v1 takes at most 128 characters of reason.
			if len(value) > 128 {
				t.Errorf("%s = %q is longer than an event's 128-character reason", name, value)
			}
			if other, dup := seen[pkg][value]; dup {
				t.Errorf("%s and %s are both %q: a reader cannot tell them apart", other, name, value)
			}
			if seen[pkg] == nil {
				seen[pkg] = map[string]string{}
			}
			seen[pkg][value] = name
		})
	}
	for _, pkg := range []string{"rollout", "ranktable", "revision", "rdma"} {
		if perPackage["github.com/kplan-dev/kplan/"+pkg] == 0 {
			t.Errorf("package %s exports no Reason constants; its reasons would escape this check", pkg)
		}
	}
}
