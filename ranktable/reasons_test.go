package ranktable

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kplan-dev/kplan"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// allReasons is every reason the package declares; TestReasonsAreDeclaredHere checks
// the list against the source.
var allReasons = []kplan.Reason{
	ReasonConfigMapCreated, ReasonConfigMapDeleted, ReasonGenerated, ReasonGenerationFailed, ReasonAnnotationMissing,
	ReasonScaledToZero, ReasonWaitingForPods, ReasonWaitingForAnnotations,
	ReasonWaitTimedOut, ReasonInvalidAnnotation, ReasonTooManyPods, ReasonBuildFailed, ReasonRenderFailed,
	ReasonConfigMapConflict, ReasonInvalidConfigMapName,
	ReasonPodInOtherNamespace, ReasonPodNotOwned, ReasonGroupingLabelMissing, ReasonGroupNotExpected,
}

// phaseReasons are the reasons a group may carry in each phase.
var phaseReasons = map[Phase][]kplan.Reason{
	PhaseCompleted: {ReasonGenerated, ReasonScaledToZero},
	PhaseWaiting:   {ReasonWaitingForPods, ReasonWaitingForAnnotations},
	PhaseFailed: {ReasonWaitTimedOut, ReasonInvalidAnnotation, ReasonTooManyPods, ReasonBuildFailed, ReasonRenderFailed,
		ReasonConfigMapConflict, ReasonInvalidConfigMapName},
}

var unmatchedReasons = []kplan.Reason{ReasonPodInOtherNamespace, ReasonPodNotOwned, ReasonGroupingLabelMissing, ReasonGroupNotExpected}

var eventReasons = []kplan.Reason{ReasonConfigMapCreated, ReasonConfigMapDeleted, ReasonGenerated, ReasonGenerationFailed, ReasonAnnotationMissing}

// A reconciler sets a condition from any reason as it is: the API server's condition
// validation accepts every one.
func TestReasonsAreValidConditionReasons(t *testing.T) {
	for _, r := range allReasons {
		t.Run(string(r), func(t *testing.T) {
			c := metav1.Condition{Type: "RanktableReady", Status: metav1.ConditionFalse, Reason: string(r),
				Message: "a sentence for a human", LastTransitionTime: metav1.NewTime(t0)}
			if errs := metav1validation.ValidateConditions([]metav1.Condition{c}, field.NewPath("status", "conditions")); len(errs) > 0 {
				t.Errorf("condition with reason %q: %v", r, errs.ToAggregate())
			}
		})
	}
	t.Run("the check rejects a sentence", func(t *testing.T) {
		c := metav1.Condition{Type: "RanktableReady", Status: metav1.ConditionFalse, Reason: "has no controller ownerReference",
			LastTransitionTime: metav1.NewTime(t0)}
		if errs := metav1validation.ValidateConditions([]metav1.Condition{c}, field.NewPath("status", "conditions")); len(errs) == 0 {
			t.Error("a sentence passed as a reason")
		}
	})
}

// Every constant of type kplan.Reason in the package's source is in allReasons, with
// the same value, and no two share a value.
func TestReasonsAreDeclaredHere(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	declared := map[string]string{} // value -> constant name
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				sel, ok := vs.Type.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Reason" || sel.X.(*ast.Ident).Name != "kplan" {
					continue
				}
				for i, name := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s is not a string literal", name.Name)
					}
					v, _ := strconv.Unquote(lit.Value)
					if other, dup := declared[v]; dup {
						t.Errorf("%s and %s are both %q", other, name.Name, v)
					}
					declared[v] = name.Name
				}
			}
		}
	}
	var listed []string
	for _, r := range allReasons {
		listed = append(listed, string(r))
	}
	got := slices.Sorted(maps.Keys(declared))
	slices.Sort(listed)
	if !slices.Equal(got, listed) {
		t.Errorf("declared reasons %q\nlisted in allReasons %q", got, listed)
	}
}

// checkReasons fails t unless every reason in res is one the package declares for its
// place: a group's for its phase, an unmatched pod's, an event's; and every group and
// unmatched pod has a message.
func checkReasons(t interface {
	Helper()
	Fatalf(string, ...any)
}, res Result) {
	t.Helper()
	for _, st := range res.Groups {
		if !slices.Contains(phaseReasons[st.Phase], st.Reason) || st.Message == "" ||
			!strings.HasPrefix(st.Message, "group "+st.Group.String()) {
			t.Fatalf("group %s: phase %s, reason %q, message %q", st.Group, st.Phase, st.Reason, st.Message)
		}
		if (st.Phase == PhaseFailed) != (st.Error != nil) {
			t.Fatalf("group %s: phase %s with error %v", st.Group, st.Phase, st.Error)
		}
	}
	for _, u := range res.Unmatched {
		if !slices.Contains(unmatchedReasons, u.Reason) || !strings.HasPrefix(u.Message, "pod "+u.Pod) {
			t.Fatalf("unmatched pod %s: reason %q, message %q", u.Pod, u.Reason, u.Message)
		}
	}
	for _, e := range res.Events {
		if !slices.Contains(eventReasons, e.Reason) || e.Message == "" {
			t.Fatalf("event %+v", e)
		}
	}
}
