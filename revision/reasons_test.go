package revision

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplan-dev/kplan"
)

// allReasons are the package's reason constants. TestReasonsAreTheDeclaredConstants
// keeps the list whole.
var allReasons = map[string]kplan.Reason{
	"ReasonRevisionCreated":               ReasonRevisionCreated,
	"ReasonRevisionRestored":              ReasonRevisionRestored,
	"ReasonHashCollision":                 ReasonHashCollision,
	"ReasonContainersChanged":             ReasonContainersChanged,
	"ReasonPodsUpdated":                   ReasonPodsUpdated,
	"ReasonPodsRolledBack":                ReasonPodsRolledBack,
	"ReasonRevisionsTrimmed":              ReasonRevisionsTrimmed,
	"ReasonRolloutComplete":               ReasonRolloutComplete,
	"ReasonNotInjected":                   ReasonNotInjected,
	"ReasonCreatedBeforeContainersChange": ReasonCreatedBeforeContainersChange,
	"ReasonRevisionNotConfirmed":          ReasonRevisionNotConfirmed,
	"ReasonPodNotReady":                   ReasonPodNotReady,
	"ReasonMaxUnavailableReached":         ReasonMaxUnavailableReached,
	"ReasonUpdatedByOwner":                ReasonUpdatedByOwner,
	"ReasonPartitioned":                   ReasonPartitioned,
}

// A reconciler sets a condition from any reason the package returns, as it is: the
// API server's condition validation accepts each one.
func TestEveryReasonIsAValidConditionReason(t *testing.T) {
	seen := map[kplan.Reason]string{}
	for _, name := range slices.Sorted(maps.Keys(allReasons)) {
		reason := allReasons[name]
		t.Run(name, func(t *testing.T) {
			if other, dup := seen[reason]; dup {
				t.Errorf("%s has the value %q of %s", name, reason, other)
			}
			seen[reason] = name
			cond := metav1.Condition{
				Type: "Complete", Status: metav1.ConditionFalse, ObservedGeneration: 1,
				LastTransitionTime: metav1.NewTime(t0), Reason: string(reason), Message: "a message",
			}
			if errs := metav1validation.ValidateConditions([]metav1.Condition{cond}, field.NewPath("status", "conditions")); len(errs) > 0 {
				t.Errorf("condition with reason %q: %v", reason, errs.ToAggregate())
			}
		})
	}
}

// Every constant of type kplan.Reason declared in the package is in allReasons, and
// the package declares no string type for reasons of its own.
func TestReasonsAreTheDeclaredConstants(t *testing.T) {
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var declared []string
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if id, ok := s.Type.(*ast.Ident); ok && id.Name == "string" && strings.HasSuffix(s.Name.Name, "Reason") {
						t.Errorf("the package declares type %s; reasons are kplan.Reason", s.Name.Name)
					}
				case *ast.ValueSpec:
					if sel, ok := s.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Reason" {
						for _, n := range s.Names {
							declared = append(declared, n.Name)
						}
					}
				}
			}
		}
	}
	slices.Sort(declared)
	if want := slices.Sorted(maps.Keys(allReasons)); !slices.Equal(declared, want) {
		t.Errorf("declared reason constants %v, the test knows %v", declared, want)
	}
}
