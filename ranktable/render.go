package ranktable

import (
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/kplan-dev/kplan/internal/canonhash"
)

// DefaultMaxOutputBytes is the default cap on a rendered table (Input.MaxOutputBytes,
// RenderOptions.MaxOutputBytes): the most data a ConfigMap can hold.
const DefaultMaxOutputBytes = 1 << 20

// RenderOptions change how a table is rendered.
type RenderOptions struct {
	// MaxOutputBytes caps the rendered table (default DefaultMaxOutputBytes, the most a
	// ConfigMap holds). Raise it only for tests and benchmarks.
	MaxOutputBytes int
}

func (o RenderOptions) limit() int {
	if o.MaxOutputBytes <= 0 {
		return DefaultMaxOutputBytes
	}
	return o.MaxOutputBytes
}

// Render executes t's ranktable template on table and checks that the result is valid
// JSON of at most opts.MaxOutputBytes bytes. table is not changed. A nil table or a nil
// Template is an error.
func (t *Template) Render(table *Table, opts RenderOptions) ([]byte, error) {
	if t == nil {
		return nil, fmt.Errorf("template is nil")
	}
	if table == nil {
		return nil, fmt.Errorf("ranktable template %s: table is nil", t.Name)
	}
	return t.render(table, opts.limit(), nil)
}

// renderString renders table as Render does and returns it as a string with its
// content hash (canonhash.Short of the string, computed on the bytes). It renders into
// the scratch buffer *scratch when that is large enough for the table, else into a new
// buffer sized for it. The string shares a new buffer, as strings.Builder does, when at
// most an eighth of it is unused; otherwise the bytes are copied and the buffer becomes
// the scratch buffer.
func (t *Template) renderString(table *Table, limit int, scratch *[]byte) (content, hash string, err error) {
	hint := min(256+80*table.ServerCount+t.perDevice*table.TotalDevices, limit+1)
	buf, fresh := *scratch, false
	if cap(buf) < hint {
		buf, fresh = make([]byte, 0, hint), true
	}
	out, err := t.render(table, limit, buf)
	if err != nil {
		return "", "", err
	}
	// canonhash.Short(s) hashes the count of strings (1), then len(s) and s.
	hash = canonhash.New().Uint64(1).Bytes(out).Hex(8)
	if fresh && len(out) > 0 && cap(out)-len(out) <= len(out)/8 {
		return unsafe.String(unsafe.SliceData(out), len(out)), hash, nil
	}
	*scratch = out[:0]
	return string(out), hash, nil
}

func (t *Template) render(table *Table, limit int, buf []byte) ([]byte, error) {
	var out []byte
	valid := false
	if t.native != nil {
		out, valid = t.native(buf[:0], table)
		if len(out) > limit {
			return nil, fmt.Errorf("ranktable template %s: rendered table has %d bytes, more than %d: %w", t.Name, len(out), limit, ErrOutputTooLarge)
		}
	} else {
		var err error
		out, err = t.tmpl.Execute(table.clone(), limit, buf)
		if err != nil {
			return nil, fmt.Errorf("ranktable template %s: %w", t.Name, err)
		}
	}
	if !valid && !json.Valid(out) {
		var v any
		err := json.Unmarshal(out, &v)
		return nil, fmt.Errorf("ranktable template %s: output is not valid JSON: %v", t.Name, err)
	}
	return out, nil
}

// clone copies the table's lists, so a template cannot change the caller's table
// (strings are immutable and shared).
func (t *Table) clone() *Table {
	c := *t
	c.Servers = cloneServers(t.Servers)
	c.SuperPods = append([]SuperPod(nil), t.SuperPods...)
	for i := range c.SuperPods {
		c.SuperPods[i].ServerIds = append([]string(nil), c.SuperPods[i].ServerIds...)
	}
	c.Roles = append([]RoleServers(nil), t.Roles...)
	for i := range c.Roles {
		c.Roles[i].Servers = cloneServers(c.Roles[i].Servers)
	}
	return &c
}

func cloneServers(s []Server) []Server {
	if s == nil {
		return nil
	}
	out := append([]Server(nil), s...)
	n := 0
	for i := range out {
		n += len(out[i].Devices)
	}
	devs := make([]RankedDevice, 0, n)
	for i := range out {
		start := len(devs)
		devs = append(devs, out[i].Devices...)
		if out[i].Devices != nil {
			out[i].Devices = devs[start:len(devs):len(devs)]
		}
	}
	return out
}
