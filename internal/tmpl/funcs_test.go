package tmpl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/Masterminds/sprig/v3"
)

func TestFuncMapIsHermetic(t *testing.T) {
	m := templateFuncs()
	for _, name := range []string{"env", "expandenv", "now", "date", "randAlpha", "randInt", "uuidv4", "shuffle", "ago", "genPrivateKey", "getHostByName"} {
		if _, ok := m[name]; ok {
			t.Errorf("the functions include %s", name)
		}
	}
	for _, name := range []string{"fromJson", "toJson", "quote", "until", "default", "add1"} {
		if _, ok := m[name]; !ok {
			t.Errorf("the functions lack %s", name)
		}
	}
	for name := range m {
		if strings.HasPrefix(name, "_") {
			t.Errorf("the functions include the hidden %s", name)
		}
	}
}

// TestEverySprigFunctionIsClassified: every function of sprig's full map is either
// kept (and budgeted) or removed with a reason, and every function sprig itself
// leaves out of its hermetic map is removed. A sprig upgrade adding a function fails
// here until it is classified.
func TestEverySprigFunctionIsClassified(t *testing.T) {
	hermetic := sprig.HermeticTxtFuncMap()
	for name := range sprig.GenericFuncMap() {
		_, kept := funcSpecs[name]
		why, removed := removedFuncs[name]
		switch {
		case kept && removed:
			t.Errorf("%s is both kept and removed", name)
		case !kept && !removed:
			t.Errorf("sprig's %s is neither kept nor removed: classify it", name)
		case removed && why == "":
			t.Errorf("%s is removed without a reason", name)
		}
		if _, ok := hermetic[name]; !ok && !removed {
			t.Errorf("%s is not hermetic by sprig's own list but is kept", name)
		}
	}
	for name := range removedFuncs {
		if _, ok := sprig.GenericFuncMap()[name]; !ok {
			t.Errorf("removed %s is not a sprig function", name)
		}
	}
}

// TestRemovedFunctionsFailToParse: naming any removed function, anywhere (here in a
// branch of a defined template that never runs), fails the parse with the function's
// name and the reason.
func TestRemovedFunctionsFailToParse(t *testing.T) {
	for name, why := range removedFuncs {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(Spec{Name: "t", Text: `{{ define "x" }}{{ if false }}{{ ` + name + ` }}{{ end }}{{ end }}{}`})
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("function %q is not available: %s", name, why)) {
				t.Fatalf("error %v", err)
			}
		})
	}
}
