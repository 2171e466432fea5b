package revision

import (
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kplan-dev/kplan/internal/names"
)

// FuzzDecodeHub: any content either fails with an error naming the ConfigMap and field,
// or decodes to a hub that encodes and decodes back to itself, byte-stable.
func FuzzDecodeHub(f *testing.F) {
	for _, s := range []string{
		`[]`, `null`, ``, `[`, `{}`, `[null]`, `[{}]`, `[{"name":"a"}]`, `[{"name":"","data":{}}]`,
		`[{"name":"0123456789abcdef","data":{"settings.yaml":"value: a"}},{"name":"fedcba9876543210","data":{}}]`,
		`[{"name":"a","data":{}},{"name":"a","data":{}}]`,
		`[{"name":"a","data":{"k":"v"},"extra":1}]`,
		`[{"name":"a","data":{"k":"v","k":"w"}}] []`,
		`[{"NAME":"a","Data":{"x":"\u00e9\ufffd"}}]`,
		`[{"name":"a b","data":{}}]`,
		`[{"name":"a","data":{"../etc/passwd":"x"}}]`, `[{"name":"a","data":{"..":"x",".":"y"}}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cms1-hub"}, Data: map[string]string{HubDataKey: s}}
		h, err := DecodeHub(cm)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "configmap ns/cms1-hub: data.revisions: ") {
				t.Fatalf("error does not name the ConfigMap and field: %v", err)
			}
			return
		}
		enc, err := h.Encode()
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[HubDataKey] = enc
		h2, err := DecodeHub(cm)
		if err != nil {
			t.Fatalf("re-decoding %q: %v", enc, err)
		}
		if diff := cmp.Diff(h, h2); diff != "" {
			t.Fatalf("round trip changed the hub (-decoded +re-decoded):\n%s", diff)
		}
		if enc2, _ := h2.Encode(); enc2 != enc {
			t.Fatalf("encoding is not stable: %q then %q", enc, enc2)
		}
		for _, r := range h.Revisions {
			files, err := h.Files(r.Name)
			if err != nil {
				t.Fatal(err)
			}
			// Every file name stays inside the sidecar's data directory.
			for k := range files {
				if p := path.Join(SidecarDataPath, k); path.Dir(p) != SidecarDataPath || len(validation.IsConfigMapKey(k)) > 0 {
					t.Fatalf("file name %q leaves the data directory: %s", k, p)
				}
			}
		}
	})
}

// FuzzKeysFor: every name KeysFor accepts gives valid, distinct keys, each the key
// domain, "configmapset.", the (shortened) name and the field.
func FuzzKeysFor(f *testing.F) {
	for _, s := range []string{"cms1", "a", "a.b", strings.Repeat("x", 25), strings.Repeat("x", 26), strings.Repeat("ab.", 84) + "c", "", "A", "-a", "a..b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		keys, err := KeysFor(name)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(name)) {
				t.Fatalf("error does not name the set: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, k := range []string{keys.UpdateRevision, keys.UpdateRevisionTimestamp, keys.CurrentRevision, keys.CurrentRevisionTimestamp, keys.UpdateOrder} {
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 || seen[k] {
				t.Fatalf("key %q: %v (or repeated)", k, msgs)
			}
			seen[k] = true
			if prefix := keyDomain + "/" + keySetPrefix + names.Fit(name, maxSetNameInKey) + "."; !strings.HasPrefix(k, prefix) {
				t.Fatalf("key %q does not start with %q", k, prefix)
			}
		}
	})
}

// FuzzParseFieldPath: an accepted fieldRef path is exactly the downward-API form of the
// source and key returned, and the key is a qualified name.
func FuzzParseFieldPath(f *testing.F) {
	for _, s := range []string{
		"metadata.labels['cName']", "metadata.annotations['example.com/sidecar']", "metadata.labels['a']']",
		"metadata.labels[cName]", "metadata.labels['']", "metadata.name", "spec.nodeName", "metadata.labels['a/b/c']",
		"metadata.annotations['x'] ", "metadata.labels['" + strings.Repeat("k", 64) + "']",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, fp string) {
		src, key, err := parseFieldPath(fp)
		if err != nil {
			if src != 0 || key != "" || err.Error() == "" {
				t.Fatalf("%q: error %v with %v %q", fp, err, src, key)
			}
			return
		}
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			t.Fatalf("%q: key %q is not a qualified name: %v", fp, key, msgs)
		}
		var rebuilt string
		switch src {
		case fromLabel:
			rebuilt = "metadata.labels['" + key + "']"
		case fromAnnotation:
			rebuilt = "metadata.annotations['" + key + "']"
		default:
			t.Fatalf("%q: source %v", fp, src)
		}
		if rebuilt != fp {
			t.Fatalf("%q parsed as %q", fp, rebuilt)
		}
		// Validation agrees with the parser.
		set := newSet(data("a"))
		set.Spec.Containers = []ContainerInjectSpec{{NameFrom: &ValueFromSource{FieldRef: corev1.ObjectFieldSelector{FieldPath: fp}}, MountPath: "/c"}}
		if errs := Validate(set); len(errs) > 0 {
			t.Fatalf("%q parses but Validate says %v", fp, errs)
		}
	})
}

// FuzzParseTimestamp: accepted timestamps are decimal milliseconds and format back to
// the same instant.
func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"0", "1739552508000", "999999999999999999", "9999999999999999999", "", "-1", "+1", "1e3", " 1", "0001", "1.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := parseTimestamp(s)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("error does not quote the input: %v", err)
			}
			return
		}
		ms, perr := strconv.ParseUint(s, 10, 63)
		if perr != nil || int64(ms) != ts.UnixMilli() {
			t.Fatalf("%q parsed to %v (%d ms)", s, ts, ts.UnixMilli())
		}
		back, err := parseTimestamp(FormatTimestamp(ts))
		if err != nil || !back.Equal(ts) {
			t.Fatalf("%q: format round trip %v %v", s, back, err)
		}
	})
}

// FuzzResolveBudgets: any partition and maxUnavailable string that validates resolves
// inside [0, pods] (maxUnavailable: at least 1 when pods > 0), and a partition below
// 100% of more than one pod leaves at least one pod to update.
func FuzzResolveBudgets(f *testing.F) {
	for _, s := range []string{"0%", "50%", "99%", "100%", "101%", "-1%", "%", "1.5%", "abc", "", "007%"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, pods int) {
		if pods < 0 || pods > 1_000_000 {
			return
		}
		v := intstr.FromString(s)
		set := newSet(data("a"), partition(v), restartWith(v))
		errs := Validate(set)
		kept, perr := ResolvePartition(&v, pods)
		mu, merr := resolveMaxUnavailable(&v, pods)
		if perr == nil && (kept < 0 || kept > pods) {
			t.Fatalf("partition %q of %d = %d", s, pods, kept)
		}
		if merr == nil && (mu < 0 || mu > pods) {
			t.Fatalf("maxUnavailable %q of %d = %d", s, pods, mu)
		}
		if len(errs) > 0 {
			return
		}
		if perr != nil || merr != nil {
			t.Fatalf("%q validates but does not resolve: %v %v", s, perr, merr)
		}
		if pods > 0 && mu < 1 {
			t.Fatalf("maxUnavailable %q of %d resolves to 0", s, pods)
		}
		if pct, _ := strconv.Atoi(strings.TrimSuffix(s, "%")); pct < 100 && pods > 1 && kept >= pods {
			t.Fatalf("partition %q of %d keeps every pod", s, pods)
		}
	})
}
