package revision

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
)

func TestRevisionHashIsCanonical(t *testing.T) {
	t.Run("separators inside keys and values cannot collide", func(t *testing.T) {
		a := RevisionHash(map[string]string{"a": "b;c=d"}, 0)
		b := RevisionHash(map[string]string{"a": "b", "c": "d"}, 0)
		if a == b {
			t.Error("collision")
		}
	})
	t.Run("the collision count changes the hash", func(t *testing.T) {
		if RevisionHash(data("x"), 0) == RevisionHash(data("x"), 1) {
			t.Error("same hash")
		}
	})
	t.Run("the name is 16 lowercase hex digits", func(t *testing.T) {
		h := RevisionHash(nil, 0)
		if len(h) != revisionNameLength || strings.Trim(h, "0123456789abcdef") != "" {
			t.Errorf("%q", h)
		}
	})
}

// weakHash collides for every data whose first value has the same length.
func weakHash(d map[string]string, cc int32) string {
	n := 0
	for _, v := range d {
		n = len(v)
	}
	return RevisionHash(map[string]string{"len": strings.Repeat("x", n)}, cc)
}

func TestHubAdd(t *testing.T) {
	var h Hub
	r1, _ := h.add(data("aa"), 0, weakHash)
	r2, err := r1.Hub.add(data("bb"), 0, weakHash)
	t.Run("a collision with different data bumps the count and rehashes", func(t *testing.T) {
		if err != nil || !r2.Created || r2.CollisionCount != 1 || r2.Name == r1.Name {
			t.Fatalf("%+v %v", r2, err)
		}
	})
	t.Run("re-adding old data moves it to newest under its old name", func(t *testing.T) {
		r3, err := r2.Hub.add(data("aa"), r2.CollisionCount, weakHash)
		if err != nil || !r3.Moved || r3.Name != r1.Name || r3.Hub.Revisions[1].Name != r1.Name || len(r3.Hub.Revisions) != 2 {
			t.Fatalf("%+v %v", r3, err)
		}
		if r2.Hub.Revisions[0].Name != r1.Name {
			t.Error("Add changed its receiver")
		}
	})
	t.Run("adding the newest data changes nothing", func(t *testing.T) {
		r4, _ := r2.Hub.add(data("bb"), 1, weakHash)
		if r4.Moved || r4.Created || r4.Name != r2.Name {
			t.Errorf("%+v", r4)
		}
	})
	t.Run("a hash that always collides is an error, not a loop", func(t *testing.T) {
		always := func(map[string]string, int32) string { return r1.Name }
		if _, err := r1.Hub.add(data("zz"), 0, always); err == nil {
			t.Error("no error")
		}
	})
}

func TestHubTrim(t *testing.T) {
	h := Hub{Revisions: []Revision{{Name: "1"}, {Name: "2"}, {Name: "3"}, {Name: "4"}, {Name: "5"}}}
	live := func(n string) bool { return n == "1" || n == "5" }
	tests := []struct {
		name  string
		limit int
		want  string
	}{
		// Non-live: 2, 3, 4. Keep the newest `limit` of them.
		{"limit 0 keeps only live revisions", 0, "1,5"},
		{"limit 1 keeps the newest non-live one", 1, "1,4,5"},
		{"a limit above the count keeps everything", 9, "1,2,3,4,5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := h.Trim(tt.limit, live)
			if s := strings.Join(got.names(), ","); s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
}

func TestDecodeHubErrors(t *testing.T) {
	cm := func(s string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cms1-hub"}, Data: map[string]string{HubDataKey: s}}
	}
	tests := []struct{ name, raw, want string }{
		{"a YAML mapping is rejected", "abc:\n  f: x", "not a JSON list"},
		{"null is rejected", "null", "null"},
		{"a revision without a name is rejected", `[{"data":{}}]`, "[0].name: missing"},
		{"a revision without data is rejected", `[{"name":"abc"}]`, "[0].data: missing"},
		{"a bad name is rejected", `[{"name":"a b","data":{}}]`, "[0].name"},
		{"a name twice is rejected", `[{"name":"a","data":{}},{"name":"a","data":{}}]`, `[1].name: "a" already at [0]`},
		{"unknown fields are rejected", `[{"name":"a","data":{},"x":1}]`, "unknown field"},
		{"trailing data is rejected", `[] []`, "trailing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeHub(cm(tt.raw))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "configmap ns/cms1-hub: data.revisions") {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	t.Run("a configmap without the key is an error", func(t *testing.T) {
		if _, err := DecodeHub(&corev1.ConfigMap{}); err == nil {
			t.Error("no error")
		}
	})
}

func TestHubRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h Hub
		n := rapid.IntRange(0, 6).Draw(t, "n")
		for i := 0; i < n; i++ {
			d := rapid.MapOf(rapid.StringMatching(`[a-z][a-z.]{0,4}`), rapid.String()).Draw(t, "data")
			r, err := h.Add(d, 0)
			if err != nil {
				t.Fatal(err)
			}
			h = r.Hub
		}
		cm, err := h.HubConfigMap("ns", "s", nil)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeHub(cm)
		if err != nil {
			t.Fatal(err)
		}
		if len(back.Revisions) != len(h.Revisions) {
			t.Fatalf("%d revisions back, want %d", len(back.Revisions), len(h.Revisions))
		}
		for i := range h.Revisions {
			if back.Revisions[i].Name != h.Revisions[i].Name || !maps.Equal(back.Revisions[i].Data, h.Revisions[i].Data) {
				t.Fatalf("revision %d differs", i)
			}
			files, err := back.Files(h.Revisions[i].Name)
			if err != nil || !maps.Equal(files, h.Revisions[i].Data) {
				t.Fatalf("Files: %v", err)
			}
		}
	})
}

func TestHubFilesOfAMissingRevision(t *testing.T) {
	if _, err := (Hub{}).Files("nope"); err == nil || !strings.Contains(err.Error(), `"nope" is not in the hub`) {
		t.Errorf("err = %v", err)
	}
}

// A set without data once wrote "data": null, which DecodeHub rejects, so the next
// reconcile failed on its own hub.
func TestHubWithoutDataRoundTrips(t *testing.T) {
	for _, d := range []map[string]string{nil, {}} {
		res, err := Plan(Input{Set: newSet(d), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		h, err := DecodeHub(res.Hub.ConfigMap)
		if err != nil || len(h.Revisions) != 1 || h.Revisions[0].Data == nil {
			t.Fatalf("data %v: hub %+v, %v", d, h, err)
		}
		if _, err := Plan(Input{Set: newSet(d), Hub: res.Hub.ConfigMap, Now: now}); err != nil {
			t.Errorf("data %v: second reconcile: %v", d, err)
		}
	}
	t.Run("a hub built with nil data encodes it as {} and is not changed", func(t *testing.T) {
		h := Hub{Revisions: []Revision{{Name: "a"}, {Name: "b", Data: data("x")}, {Name: "c"}}}
		enc, err := h.Encode()
		if err != nil || enc != `[{"name":"a","data":{}},{"name":"b","data":{"settings.yaml":"value: x"}},{"name":"c","data":{}}]` {
			t.Fatalf("%s %v", enc, err)
		}
		if h.Revisions[0].Data != nil || h.Revisions[2].Data != nil {
			t.Error("Encode changed the hub")
		}
	})
}

// A file name in the hub becomes a path in the reload sidecar's data directory. A
// name that is not a valid ConfigMap key, above all one that climbs out of the
// directory, is rejected wherever a hub is read, built, written or handed out.
func TestHubKeysThatAreNotFileNamesAreRejected(t *testing.T) {
	bad := []string{"../etc/passwd", "..", ".", "..data", "a/b", "/abs", `a\b`, "", strings.Repeat("a", 254)}
	for _, key := range bad {
		t.Run(fmt.Sprintf("%.20q", key), func(t *testing.T) {
			files := map[string]string{"ok.yaml": "x", key: "pwned"}
			raw, err := json.Marshal([]map[string]any{{"name": "abc", "data": files}})
			if err != nil {
				t.Fatal(err)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cms1-hub"}, Data: map[string]string{HubDataKey: string(raw)}}
			if _, err := DecodeHub(cm); err == nil || !strings.Contains(err.Error(), "data.revisions: [0].data["+strconv.Quote(key)+"]: not a valid file name") {
				t.Errorf("DecodeHub: err = %v", err)
			}
			if _, err := Plan(Input{Set: newSet(data("a")), Hub: cm, Now: now}); err == nil || !strings.Contains(err.Error(), "not a valid file name") {
				t.Errorf("Plan with the hub: err = %v", err)
			}
			if _, err := (Hub{}).Add(files, 0); err == nil || !strings.Contains(err.Error(), "data["+strconv.Quote(key)+"]: not a valid file name") {
				t.Errorf("Add: err = %v", err)
			}
			h := Hub{Revisions: []Revision{{Name: "abc", Data: files}}}
			if got, err := h.Files("abc"); err == nil || got != nil {
				t.Errorf("Files = %v, %v; want an error", got, err)
			}
			if _, err := h.Encode(); err == nil {
				t.Error("Encode: no error")
			}
			if _, err := h.HubConfigMap("ns", "cms1", nil); err == nil {
				t.Error("HubConfigMap: no error")
			}
			set := newSet(files)
			if errs := Validate(set); len(errs) == 0 {
				t.Error("Validate: no error")
			}
		})
	}
	t.Run("valid names pass everywhere", func(t *testing.T) {
		files := map[string]string{"a.yaml": "1", ".hidden": "2", "a..b": "3", "x-_.Y9": "4", strings.Repeat("a", 253): "5"}
		r, err := (Hub{}).Add(files, 0)
		if err != nil {
			t.Fatal(err)
		}
		cm, err := r.Hub.HubConfigMap("ns", "cms1", nil)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeHub(cm)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := back.Files(r.Name); err != nil || !maps.Equal(got, files) {
			t.Errorf("Files = %v, %v", got, err)
		}
	})
}
