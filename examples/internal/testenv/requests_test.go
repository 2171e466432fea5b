package testenv_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/examples/internal/testenv"
)

// TestResourceReadsCountsGetsAndLists: GETs of one object and LISTs of the resource
// are counted, watches, writes and other resources are not; a held watch's body
// reads only after Release.
func TestResourceReadsCountsGetsAndLists(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	defer srv.Close()
	reads := &testenv.ResourceReads{Resource: "leaderworkersets"}
	c := &http.Client{Transport: reads.Wrap(http.DefaultTransport)}
	base := srv.URL + "/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/"
	do := func(method, url string) {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
	}
	for _, c := range []struct {
		name        string
		method, url string
		gets, lists int
	}{
		{"a GET of one object", http.MethodGet, base + "leaderworkersets/serve", 1, 0},
		{"a LIST", http.MethodGet, base + "leaderworkersets", 0, 1},
		{"a LIST in every namespace", http.MethodGet, srv.URL + "/apis/leaderworkerset.x-k8s.io/v1/leaderworkersets?limit=500", 0, 1},
		{"a watch", http.MethodGet, base + "leaderworkersets?watch=true", 0, 0},
		{"a write", http.MethodPut, base + "leaderworkersets/serve", 0, 0},
		{"another resource", http.MethodGet, base + "pods/serve-0", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			do(c.method, c.url)
			if gets, lists := reads.Take(); gets != c.gets || lists != c.lists {
				t.Errorf("counted %d GETs and %d LISTs, want %d and %d", gets, lists, c.gets, c.lists)
			}
		})
	}

	t.Run("a held watch reads after Release", func(t *testing.T) {
		reads.Hold()
		done := make(chan struct{})
		go func() {
			defer close(done)
			do(http.MethodGet, base+"leaderworkersets?watch=true")
		}()
		select {
		case <-done:
			t.Fatal("the watch's body was read while held")
		case <-time.After(200 * time.Millisecond):
		}
		reads.Release()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the watch's body was not read after Release")
		}
	})
}
