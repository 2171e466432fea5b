package ranktable

import (
	"encoding/json"
	"strings"
	"unsafe"

	"fmt"
	"github.com/kplan-dev/kplan/internal/canonhash"
	"strconv"
)

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
		out, err = t.tmpl.execute(table.clone(), limit, buf, podInfo{})
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

// nativeRenderer appends the output of one library template for table to dst. valid
// reports that the output is valid JSON by construction (every string it wrote was
// plain); when false the caller checks it.
type nativeRenderer func(dst []byte, table *Table) (out []byte, valid bool)

// nativeFor returns the native renderer of the library template whose text is exactly
// text, or nil, and about how many bytes the template writes per device (a little more
// than for the usual ids and addresses), for sizing buffers.
func nativeFor(text string) (nativeRenderer, int) {
	switch text {
	case designTemplateText:
		return renderDesign, 128
	case simpleTemplateText:
		return renderSimple, 56
	case extendedTemplateText:
		return renderExtended, 128
	case hcclTemplateText:
		return renderHCCL12, 160
	case pdTemplateText:
		return renderVLLMPD, 200
	}
	return nil, 128
}

// jsonWriter appends template output and tracks whether every string written was
// plain: printable ASCII without '"' or '\'. A plain string quoted by sprig's quote
// (Go's %q) is the same JSON string, and written raw inside a JSON string literal
// keeps it valid.
type jsonWriter struct {
	b     []byte
	plain bool
}

func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// quote appends s as sprig's quote does (strconv.Quote).
func (w *jsonWriter) quote(s string) {
	if isPlain(s) {
		w.b = append(w.b, '"')
		w.b = append(w.b, s...)
		w.b = append(w.b, '"')
		return
	}
	w.plain = false
	w.b = strconv.AppendQuote(w.b, s)
}

// json appends s as the toJson function does (json.Marshal).
func (w *jsonWriter) json(s string) {
	if isPlain(s) && !strings.ContainsAny(s, "<>&") {
		w.b = append(w.b, '"')
		w.b = append(w.b, s...)
		w.b = append(w.b, '"')
		return
	}
	w.plain = false
	j, _ := toJSON(s) // a string always marshals
	w.b = append(w.b, j...)
}

// int appends n as {{ n }} does.
func (w *jsonWriter) int(n int64) { w.b = strconv.AppendInt(w.b, n, 10) }

// raw appends s as {{ s }} does.
func (w *jsonWriter) raw(s string) {
	w.plain = w.plain && isPlain(s)
	w.b = append(w.b, s...)
}

// renderDesign renders the design's MindIE role / vLLM-Ascend group template.
func renderDesign(b []byte, t *Table) ([]byte, bool) {
	w := jsonWriter{b: b, plain: true}
	w.b = append(w.b, "{\n  \"version\": \"1.0\",\n  \"server_count\": \""...)
	w.b = strconv.AppendInt(w.b, int64(t.ServerCount), 10)
	w.b = append(w.b, "\",\n  \"server_list\": ["...)
	for i := range t.Servers {
		s := &t.Servers[i]
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, "\n    {\n      \"server_id\": "...)
		w.quote(s.ServerId)
		w.b = append(w.b, ",\n      \"device\": ["...)
		for j := range s.Devices {
			d := &s.Devices[j]
			if j > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, "\n        {\n          \"device_id\": "...)
			w.quote(d.DeviceId)
			w.b = append(w.b, ",\n          \"device_ip\": "...)
			w.quote(d.DeviceIp)
			w.b = append(w.b, ",\n          \"rank_id\": "...)
			w.quote(d.RankId)
			w.b = append(w.b, "\n        }"...)
		}
		w.b = append(w.b, "\n      ]\n    }"...)
	}
	w.b = append(w.b, "\n  ],\n  \"status\": \""...)
	w.raw(t.Status)
	w.b = append(w.b, "\"\n}\n"...)
	return w.b, w.plain
}

// renderSimple renders the design's simplified template.
func renderSimple(b []byte, t *Table) ([]byte, bool) {
	w := jsonWriter{b: b, plain: true}
	w.b = append(w.b, "{\n  \"server_count\": \""...)
	w.b = strconv.AppendInt(w.b, int64(t.ServerCount), 10)
	w.b = append(w.b, "\",\n  \"server_list\": ["...)
	for i := range t.Servers {
		s := &t.Servers[i]
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, "\n    {\n      \"server_id\": "...)
		w.quote(s.ServerId)
		w.b = append(w.b, ",\n      \"device\": ["...)
		for j := range s.Devices {
			d := &s.Devices[j]
			if j > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, "\n        {\"device_id\": "...)
			w.quote(d.DeviceId)
			w.b = append(w.b, ", \"rank_id\": "...)
			w.quote(d.RankId)
			w.b = append(w.b, '}')
		}
		w.b = append(w.b, "\n      ]\n    }"...)
	}
	w.b = append(w.b, "\n  ]\n}\n"...)
	return w.b, w.plain
}

// renderExtended renders the MindIE extended template.
func renderExtended(b []byte, t *Table) ([]byte, bool) {
	w := jsonWriter{b: b, plain: true}
	w.b = append(w.b, "{\n  \"version\": \"1.0\",\n  \"server_count\": \""...)
	w.int(int64(t.ServerCount))
	w.b = append(w.b, "\",\n  \"total_devices\": \""...)
	w.int(int64(t.TotalDevices))
	w.b = append(w.b, "\",\n  \"generated_at\": \""...)
	w.raw(t.Timestamp)
	w.b = append(w.b, "\",\n  \"server_list\": ["...)
	for i := range t.Servers {
		s := &t.Servers[i]
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, "\n    {\n      \"server_id\": "...)
		w.quote(s.ServerId)
		w.b = append(w.b, ",\n      \"device_count\": \""...)
		w.int(int64(len(s.Devices)))
		w.b = append(w.b, "\",\n      \"device\": ["...)
		for j := range s.Devices {
			d := &s.Devices[j]
			if j > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, "\n        {\n          \"device_id\": "...)
			w.quote(d.DeviceId)
			w.b = append(w.b, ",\n          \"device_ip\": "...)
			w.quote(d.DeviceIp)
			w.b = append(w.b, ",\n          \"rank_id\": "...)
			w.quote(d.RankId)
			w.b = append(w.b, "\n        }"...)
		}
		w.b = append(w.b, "\n      ]\n    }"...)
	}
	w.b = append(w.b, "\n  ],\n  \"status\": \""...)
	w.raw(t.Status)
	w.b = append(w.b, "\"\n}\n"...)
	return w.b, w.plain
}

// renderHCCL12 renders the HCCL v1.2 template (with super_pod_list on Atlas A3).
func renderHCCL12(b []byte, t *Table) ([]byte, bool) {
	w := jsonWriter{b: b, plain: true}
	w.b = append(w.b, "{\n  \"version\": \"1.2\",\n  \"server_count\": \""...)
	w.int(int64(t.ServerCount))
	w.b = append(w.b, "\",\n  \"server_list\": ["...)
	for i := range t.Servers {
		s := &t.Servers[i]
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, "\n    {\n      \"server_id\": "...)
		w.json(s.ServerId)
		w.b = append(w.b, ',')
		if s.HostIp != "" {
			w.b = append(w.b, "\n      \"host_ip\": "...)
			w.json(s.HostIp)
			w.b = append(w.b, ',')
		}
		if s.ContainerIp != "" {
			w.b = append(w.b, "\n      \"container_ip\": "...)
			w.json(s.ContainerIp)
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, "\n      \"device\": ["...)
		for j := range s.Devices {
			d := &s.Devices[j]
			if j > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, "\n        {\n          \"device_id\": "...)
			w.json(d.DeviceId)
			w.b = append(w.b, ",\n          \"device_ip\": "...)
			w.json(d.DeviceIp)
			w.b = append(w.b, ',')
			if d.SuperDeviceId != "" {
				w.b = append(w.b, "\n          \"super_device_id\": "...)
				w.json(d.SuperDeviceId)
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, "\n          \"rank_id\": "...)
			w.json(d.RankId)
			w.b = append(w.b, "\n        }"...)
		}
		w.b = append(w.b, "\n      ]\n    }"...)
	}
	w.b = append(w.b, "\n  ],"...)
	if len(t.SuperPods) > 0 {
		w.b = append(w.b, "\n  \"super_pod_list\": ["...)
		for i := range t.SuperPods {
			p := &t.SuperPods[i]
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, "\n    {\n      \"super_pod_id\": "...)
			w.json(p.SuperPodId)
			w.b = append(w.b, ",\n      \"server_list\": ["...)
			for j, id := range p.ServerIds {
				if j > 0 {
					w.b = append(w.b, ',')
				}
				w.b = append(w.b, "\n        {\"server_id\": "...)
				w.json(id)
				w.b = append(w.b, '}')
			}
			w.b = append(w.b, "\n      ]\n    }"...)
		}
		w.b = append(w.b, "\n  ],"...)
	}
	w.b = append(w.b, "\n  \"status\": "...)
	w.json(t.Status)
	w.b = append(w.b, "\n}\n"...)
	return w.b, w.plain
}

// renderVLLMPD renders the vLLM-Ascend prefill/decode template: the devices of the
// "prefill" roles, then of the "decode" roles, numbered by cluster_id from 1.
func renderVLLMPD(b []byte, t *Table) ([]byte, bool) {
	w := jsonWriter{b: b, plain: true}
	w.b = append(w.b, "{\n  \"version\": \"1.2\",\n  \"server_count\": \""...)
	w.int(int64(t.ServerCount))
	w.b = append(w.b, "\",\n  \"status\": "...)
	w.json(t.Status)
	w.b = append(w.b, ',')
	n := int64(0)
	for _, list := range [...]string{"prefill", "decode"} {
		w.b = append(w.b, "\n  \""...)
		w.b = append(w.b, list...)
		w.b = append(w.b, "_device_list\": ["...)
		first := true
		for ri := range t.Roles {
			r := &t.Roles[ri]
			if r.Role != list {
				continue
			}
			for si := range r.Servers {
				s := &r.Servers[si]
				server := s.ServerId
				if s.ContainerIp != "" {
					server = s.ContainerIp
				}
				for di := range s.Devices {
					d := &s.Devices[di]
					if !first {
						w.b = append(w.b, ',')
					}
					first = false
					n++
					w.b = append(w.b, "\n    {\n      \"server_id\": "...)
					w.json(server)
					w.b = append(w.b, ",\n      \"device_id\": "...)
					w.json(d.DeviceId)
					w.b = append(w.b, ",\n      \"device_ip\": "...)
					w.json(d.DeviceIp)
					w.b = append(w.b, ",\n      \"super_pod_id\": "...)
					w.json(s.SuperPodId)
					w.b = append(w.b, ",\n      \"super_device_id\": "...)
					w.json(d.SuperDeviceId)
					w.b = append(w.b, ",\n      \"cluster_id\": \""...)
					w.int(n)
					w.b = append(w.b, "\"\n    }"...)
				}
			}
		}
		w.b = append(w.b, "\n  ]"...)
		if list == "prefill" {
			w.b = append(w.b, ',')
		}
	}
	w.b = append(w.b, "\n}\n"...)
	return w.b, w.plain
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
