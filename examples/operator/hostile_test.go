package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/operator/ranktables"
	"github.com/kplan-dev/kplan/ranktable"
)

// hostileTemplate is a template a cluster user could write to stall or kill the
// operator; want is what the owner's event and condition must say besides the
// template's name.
type hostileTemplate struct {
	name      string
	ranktable string // the ranktable template ("" for the MindIE role template)
	parser    string // a parser template ("" for the built-in parser)
	loads     bool   // the template loads (it fails only when rendered)
	want      string
}

var hostileTemplates = []hostileTemplate{
	{name: "work", loads: true, ranktable: `{{ $l := until 65536 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}`, want: "MaxTemplateWork"},
	{name: "values", loads: true, ranktable: `{{ $s := "x" }}{{ range until 100 }}{{ $s = print $s $s }}{{ end }}`, want: "MaxTemplateValueBytes"},
	{name: "cycle", loads: true, ranktable: `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $d }}`, want: "contains the dict itself"},
	{name: "depth", loads: true, ranktable: `{{ $d := dict }}{{ range until 1000 }}{{ $d = dict "a" $d }}{{ end }}{{ toJson $d }}`, want: "nested deeper than"},
	{name: "output", loads: true, ranktable: `{{ printf "%0999999d" 1 }}{{ printf "%0999999d" 1 }}`, want: "output too large"},
	{name: "parser-work", loads: true, parser: `{{ $l := until 65536 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}`, want: "MaxTemplateWork"},
	{name: "clock", ranktable: `{{ now }}`, want: `function "now" is not available: it reads the clock`},
	{name: "recursion", ranktable: `{{ define "a" }}{{ template "a" . }}{{ end }}{{ template "a" . }}`, want: "recursive templates are not allowed"},
}

// TestRanktableHostileTemplates applies each hostile template for its own owner while
// the design's owner with a good template runs: every bad owner gets a Warning event
// and a RanktableReady=False condition naming its template and the limit, the good
// owner's table still completes and follows its pods, and pods are still created
// through the webhook (a bad owner's too, unless its template does not load).
func TestRanktableHostileTemplates(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	good := designScenario(t, ns, 2)
	tableIs(t, ns, designCM, designTable(t), "the good owner's table")

	mindie, _ := ranktable.LibraryConfigMap(ranktable.LibraryMindIERole)
	for _, h := range hostileTemplates {
		tmplName := fmt.Sprintf("hostile-%s-%s", ns, h.name)
		data := map[string]string{
			ranktable.KeyInferenceEngine: "mindie", ranktable.KeyLevel: "role",
			ranktable.KeyRanktableTemplate: h.ranktable, ranktable.KeyPodParserTemplate: ranktable.BuiltinRanktableJSON,
		}
		if h.ranktable == "" {
			data[ranktable.KeyRanktableTemplate] = mindie.Data[ranktable.KeyRanktableTemplate]
		}
		if h.parser != "" {
			data[ranktable.KeyPodParserTemplate] = tmplName + "-parser"
			parser := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ranktable.DefaultTemplateNamespace, Name: tmplName + "-parser",
				Labels: map[string]string{ranktable.LabelComponent: ranktables.ComponentParser}},
				Data: map[string]string{ranktable.KeyParserTemplate: h.parser}}
			if err := admin.Create(ctx, parser); err != nil {
				t.Fatal(err)
			}
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ranktable.DefaultTemplateNamespace, Name: tmplName,
			Labels: map[string]string{ranktable.LabelComponent: ranktables.ComponentTemplate}}, Data: data}
		if err := admin.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		ownerName := "bad-" + h.name
		newOwner(t, ns, ownerName, 1, map[string]string{ranktable.AnnotationTemplate: tmplName}, role{"worker", 1})
		if h.loads {
			pod := podOf(ownerName, "worker", 0, 0)
			annotate(t, ns, pod, deviceAnnotation(pod, "10.9.0.1", "10.9.1", 1))
		}
	}

	for _, h := range hostileTemplates {
		t.Run(h.name, func(t *testing.T) {
			ownerName := "bad-" + h.name
			tmplID := ranktable.DefaultTemplateNamespace + "/hostile-" + ns + "-" + h.name
			ev := waitEvent(t, ns, string(ranktable.ReasonGenerationFailed), ownerName)
			if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, tmplID) || !strings.Contains(ev.Note, h.want) {
				t.Errorf("event %s %q does not name template %s and %q", ev.Type, ev.Note, tmplID, h.want)
			}
			condition(t, ns, ownerName, "the owner's condition", func(c metav1.Condition) error {
				if c.Status != metav1.ConditionFalse || (c.Reason != string(ranktable.ReasonGenerationFailed) && c.Reason != ranktables.ReasonGroupsFailed) ||
					!strings.Contains(c.Message, tmplID) || !strings.Contains(c.Message, h.want) {
					return fmt.Errorf("condition %+v does not name template %s and %q", c, tmplID, h.want)
				}
				return nil
			})
		})
	}

	t.Run("a bad owner's pods are refused at creation only when its template does not load", func(t *testing.T) {
		var ms servingv1.ModelServing
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bad-clock"}, &ms); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad-clock-x", Labels: ms.Spec.Roles[0].Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(&ms, servingv1.GroupVersion.WithKind("ModelServing"))}},
			Spec: *ms.Spec.Roles[0].Template.Spec.DeepCopy()}
		err := operClient(t).Create(ctx, pod) // only the operator creates a ModelServing's pods
		if err == nil || !strings.Contains(err.Error(), `function "now" is not available`) {
			t.Fatalf("creating a pod of an owner whose template does not load: %v, want a denial naming the function", err)
		}
		for _, h := range hostileTemplates {
			name := podOf("bad-"+h.name, "worker", 0, 0)
			err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.Pod{})
			if exists := err == nil; exists != h.loads {
				t.Errorf("pod %s exists: %v (%v), want %v", name, exists, err, h.loads)
			}
		}
	})

	t.Run("the good owner still follows its pods", func(t *testing.T) {
		condition(t, ns, good.Name, "the good owner's condition", is(metav1.ConditionTrue, ranktables.ReasonRanktableReady))
		name := podOf(good.Name, "worker", 0, 1)
		deletePod(t, ns, name) // the operator creates the replacement through the webhook
		tableIs(t, ns, designCM, "", "the good owner's table reset")
		annotate(t, ns, name, deviceAnnotation(name, "192.168.1.11", "10.30.0", 50))
		eventually(t, "the good owner's regenerated table", func() error {
			var cm corev1.ConfigMap
			if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: designCM}, &cm); err != nil {
				return err
			}
			return checkRegenerated(cm.Data[ranktable.DefaultFilename])
		})
	})
}
