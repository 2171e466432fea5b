package ranktable

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"
)

// Group and role label values with upper case, '_' or spaces give valid ConfigMap
// names (lowered, with a hash of the original so they stay apart from the plain
// lower-case value); valid names are unchanged.
func TestConfigMapNamesAreValidForAnyLabelValues(t *testing.T) {
	cases := []struct {
		name   string
		owner  string
		key    GroupKey
		prefix string // the name without its hash suffix; "" when unchanged
		same   string // the unchanged name
	}{
		{"upper case group", "qwen", GroupKey{"Qwen-0", "worker-0"}, "qwen-qwen-0-worker-0-ranktable-", ""},
		{"spaces in the role", "qwen", GroupKey{"qwen-0", "Prefill Worker 0"}, "qwen-0-prefill-worker-0-ranktable-", ""},
		{"underscores", "qwen", GroupKey{Role: "decode_1"}, "qwen-decode-1-ranktable-", ""},
		{"only symbols", "qwen", GroupKey{Role: "__"}, "qwen-ranktable-", ""},
		{"a valid name is unchanged", "qwen", GroupKey{"qwen-0", "worker-0"}, "", "qwen-0-worker-0-ranktable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ConfigMapName(c.owner, c.key)
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Fatalf("%q: %v", got, errs)
			}
			if c.same != "" {
				if got != c.same {
					t.Fatalf("got %q, want %q", got, c.same)
				}
				return
			}
			if !strings.HasPrefix(got, c.prefix) || len(got) != len(c.prefix)+8 {
				t.Fatalf("got %q, want %q and 8 hex digits", got, c.prefix)
			}
		})
	}
	if a, b := ConfigMapName("qwen", GroupKey{Role: "Worker"}), ConfigMapName("qwen", GroupKey{Role: "worker"}); a == b {
		t.Errorf("roles Worker and worker share ConfigMap %s", a)
	}
	rapid.Check(t, func(t *rapid.T) {
		owner := rapid.StringMatching(`[a-z0-9]([-a-z0-9]{0,60}[a-z0-9])?`).Draw(t, "owner")
		k := GroupKey{Group: rapid.String().Draw(t, "group"), Role: rapid.String().Draw(t, "role")}
		got := ConfigMapName(owner, k)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Fatalf("ConfigMapName(%q, %q) = %q: %v", owner, k, got, errs)
		}
		if ConfigMapName(owner, k) != got {
			t.Fatal("not deterministic")
		}
	})
}

// Plan never marks a group Completed with a ConfigMap name the API server would
// reject: pods labelled with upper case and spaces get valid names.
func TestPlanGivesValidConfigMapNamesForUpperCaseLabels(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	var pods []*corev1.Pod
	for k := range 2 {
		p := kthenaPod(o, 0, "worker-0", k, true, 8)
		p.Labels[LabelGroupName] = "MS Group"
		p.Labels[LabelRoleID] = "Worker_0"
		pods = append(pods, p)
	}
	res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 || res.Groups[0].Phase != PhaseCompleted || len(res.ConfigMaps) != 1 {
		t.Fatalf("groups %+v", res.Groups)
	}
	name := res.ConfigMaps[0].ConfigMap.Name
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || name != res.Groups[0].ConfigMapName {
		t.Fatalf("ConfigMap %q (status says %q): %v", name, res.Groups[0].ConfigMapName, errs)
	}
	if !strings.HasPrefix(name, "ms-ms-group-worker-0-ranktable-") {
		t.Errorf("ConfigMap %q", name)
	}
}

// The owner's namespace becomes the ConfigMaps' namespace: an invalid one is an input
// error.
func TestPlanRejectsAnInvalidOwnerNamespace(t *testing.T) {
	o := testOwner("ms")
	o.Namespace = "Default Space"
	_, err := Plan(Input{Owner: o, Template: mustLibrary(t, LibraryMindIERole, LoadOptions{}), Now: t0})
	if err == nil || !strings.Contains(err.Error(), `Owner.Namespace "Default Space"`) {
		t.Fatalf("error %v", err)
	}
}

func TestIsDNSLabelAgreesWithValidation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringMatching(`[-a-z0-9A-Z.]{0,70}`)).Draw(t, "s")
		if got, want := isDNSLabel(s), len(validation.IsDNS1123Label(s)) == 0; got != want {
			t.Fatalf("isDNSLabel(%q) = %v, validation says %v", s, got, want)
		}
	})
}
