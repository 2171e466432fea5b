package ranktable

import (
	"github.com/kplan-dev/kplan"
	"os"
	"testing"
)

// TestDesignScenario is the design's "完整示例场景": two pods with 8 NPUs each, the
// standard parser template and the MindIE role template, run through Plan. The
// ConfigMap must be the design's name and hold the design's table (JSON-equal; the
// expected file is copied from the design), rendered through text/template and
// natively alike.
func TestDesignScenario(t *testing.T) {
	want, err := os.ReadFile("testdata/design-expected.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, native := range []bool{false, true} {
		name := "the template runs through text/template"
		if native {
			name = "the template is rendered natively"
		}
		t.Run(name, func(t *testing.T) {
			o := testOwner("qwen-inference")
			tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
			if !native {
				tm = withoutNative(tm)
			}
			if (tm.native != nil) != native {
				t.Fatalf("native renderer chosen = %v, want %v", tm.native != nil, native)
			}
			res, err := Plan(Input{Owner: o, Template: tm, Pods: designPods(o), Grouping: designGrouping, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.ConfigMaps) != 1 || len(res.Groups) != 1 {
				t.Fatalf("got %d ConfigMaps and %d groups, want 1 and 1: %+v", len(res.ConfigMaps), len(res.Groups), res.Groups)
			}
			dc := res.ConfigMaps[0]
			if dc.ConfigMap.Name != "qwen-inference-worker-ranktable" || dc.Action != kplan.ActionCreate {
				t.Errorf("ConfigMap %s action %s, want qwen-inference-worker-ranktable create", dc.ConfigMap.Name, dc.Action)
			}
			if res.Groups[0].Phase != PhaseCompleted {
				t.Fatalf("group phase %s (%v), want Completed", res.Groups[0].Phase, res.Groups[0].Error)
			}
			got := dc.ConfigMap.Data["ranktable.json"]
			if !jsonEqual(t, got, string(want)) {
				t.Errorf("table is not the design's:\n%s", got)
			}
			golden(t, "design-rendered.json", []byte(got))
			ref := dc.ConfigMap.OwnerReferences
			if len(ref) != 1 || ref[0].Kind != "ModelServing" || ref[0].Controller == nil || !*ref[0].Controller {
				t.Errorf("owner references %+v, want one controller reference to the ModelServing", ref)
			}
		})
	}
}
