package testenv

import (
	"io"
	"net/http"
	"strings"
	"sync"
)

// ResourceReads counts the reads of one resource a client sends through a transport
// it wraps (rest.Config.Wrap): GETs of one object and LISTs, watches aside. It can
// also hold back what the client's watches of the resource receive, to play a
// cache that lags behind the API server.
type ResourceReads struct {
	// Resource is the resource's plural name, e.g. "leaderworkersets".
	Resource string

	mu          sync.Mutex
	gets, lists int
	held        chan struct{} // closed on Release; nil when not holding
}

// Wrap returns rt counting the reads of the resource; pass it to rest.Config.Wrap.
func (r *ResourceReads) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet {
			return rt.RoundTrip(req)
		}
		segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		n := len(segs)
		if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
			resp, err := rt.RoundTrip(req)
			if err == nil && segs[n-1] == r.Resource {
				resp.Body = &heldBody{ReadCloser: resp.Body, r: r}
			}
			return resp, err
		}
		r.mu.Lock()
		switch {
		case segs[n-1] == r.Resource:
			r.lists++
		case n >= 2 && segs[n-2] == r.Resource:
			r.gets++
		}
		r.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// Counts returns the GETs and LISTs counted since the start or the last Take.
func (r *ResourceReads) Counts() (gets, lists int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets, r.lists
}

// Take returns the counts and starts counting afresh.
func (r *ResourceReads) Take() (gets, lists int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	gets, lists = r.gets, r.lists
	r.gets, r.lists = 0, 0
	return gets, lists
}

// Hold holds back what the watches of the resource receive from now on, until
// Release.
func (r *ResourceReads) Hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		r.held = make(chan struct{})
	}
}

// Release lets the held watches go on.
func (r *ResourceReads) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held != nil {
		close(r.held)
		r.held = nil
	}
}

// heldBody is a watch's response body whose reads return only while its
// ResourceReads is not holding.
type heldBody struct {
	io.ReadCloser
	r *ResourceReads
}

func (b *heldBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.r.mu.Lock()
	held := b.r.held
	b.r.mu.Unlock()
	if held != nil {
		<-held
	}
	return n, err
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
