package ranktable

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TemplateCache keeps loaded templates keyed by the UIDs and resourceVersions of
// their ConfigMaps, so reconcilers do not re-parse templates that did not change. It
// holds the newest version per ranktable template ConfigMap UID. It is safe for
// concurrent use; the zero value is ready.
type TemplateCache struct {
	mu      sync.Mutex
	entries map[types.UID]cacheEntry
}

type cacheEntry struct {
	rtRV, parserUID, parserRV string
	opts                      LoadOptions
	tmpl                      *Template
}

// Load returns the cached template for these ConfigMap versions, loading (and caching)
// it on a miss. Errors are not cached. ConfigMaps without a UID are never cached.
func (c *TemplateCache) Load(rt, parserCM *corev1.ConfigMap, opts LoadOptions) (*Template, error) {
	if rt == nil || rt.UID == "" {
		return LoadTemplate(rt, parserCM, opts)
	}
	want := cacheEntry{rtRV: rt.ResourceVersion, opts: opts}
	if parserCM != nil {
		want.parserUID, want.parserRV = string(parserCM.UID), parserCM.ResourceVersion
	}
	c.mu.Lock()
	e, ok := c.entries[rt.UID]
	c.mu.Unlock()
	if ok && e.rtRV == want.rtRV && e.parserUID == want.parserUID && e.parserRV == want.parserRV && e.opts == want.opts {
		return e.tmpl, nil
	}
	t, err := LoadTemplate(rt, parserCM, opts)
	if err != nil {
		return nil, err
	}
	want.tmpl = t
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[types.UID]cacheEntry{}
	}
	c.entries[rt.UID] = want
	c.mu.Unlock()
	return t, nil
}

// Forget drops the template of the ranktable template ConfigMap with this UID.
func (c *TemplateCache) Forget(uid types.UID) {
	c.mu.Lock()
	delete(c.entries, uid)
	c.mu.Unlock()
}
