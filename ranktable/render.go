package ranktable

import (
	"encoding/json"

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

// Render executes t's ranktable template on table (natively when the template is a
// library template, with byte-identical output) and checks that the result is valid
// JSON of at most opts.MaxOutputBytes bytes. table is not changed.
func (t *Template) Render(table *Table, opts RenderOptions) ([]byte, error) {
	return t.render(table, opts.limit(), nil)
}

// renderString renders table as Render does, into the scratch buffer *buf (grown once
// to the table's estimated size), and returns the table as a string with its content
// hash (canonhash.Short of the string, computed on the bytes to avoid a copy).
func (t *Template) renderString(table *Table, limit int, buf *[]byte) (content, hash string, err error) {
	if hint := min(128+96*table.ServerCount+144*table.TotalDevices, limit+1); cap(*buf) < hint {
		*buf = make([]byte, 0, hint)
	}
	out, err := t.render(table, limit, *buf)
	if err != nil {
		return "", "", err
	}
	*buf = out[:0]
	// canonhash.Short(s) hashes the count of strings (1), then len(s) and s.
	return string(out), canonhash.New().Uint64(1).Bytes(out).Hex(8), nil
}

func (t *Template) render(table *Table, limit int, buf []byte) ([]byte, error) {
	var out []byte
	if t.native != nil {
		out = t.native(buf[:0], table)
		if len(out) > limit {
			return nil, fmt.Errorf("ranktable template %s: rendered table has %d bytes, more than %d: %w", t.Name, len(out), limit, ErrOutputTooLarge)
		}
	} else {
		var err error
		out, err = execute(t.tmpl, table, limit, buf)
		if err != nil {
			return nil, fmt.Errorf("ranktable template %s: %w", t.Name, err)
		}
	}
	if !json.Valid(out) {
		var v any
		err := json.Unmarshal(out, &v)
		return nil, fmt.Errorf("ranktable template %s: output is not valid JSON: %v", t.Name, err)
	}
	return out, nil
}

// nativeRenderer appends the output of one library template for table to dst.
type nativeRenderer func(dst []byte, table *Table) []byte

// nativeFor returns the native renderer of the library template whose text is exactly
// text, or nil.
func nativeFor(text string) nativeRenderer {
	switch text {
	case designTemplateText:
		return renderDesign
	case simpleTemplateText:
		return renderSimple
	}
	return nil
}

// renderDesign renders the design's MindIE role / vLLM-Ascend group template.
func renderDesign(b []byte, t *Table) []byte {
	b = append(b, "{\n  \"version\": \"1.0\",\n  \"server_count\": \""...)
	b = strconv.AppendInt(b, int64(t.ServerCount), 10)
	b = append(b, "\",\n  \"server_list\": ["...)
	for i := range t.Servers {
		s := &t.Servers[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    {\n      \"server_id\": "...)
		b = strconv.AppendQuote(b, s.ServerId)
		b = append(b, ",\n      \"device\": ["...)
		for j := range s.Devices {
			d := &s.Devices[j]
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n        {\n          \"device_id\": "...)
			b = strconv.AppendQuote(b, d.DeviceId)
			b = append(b, ",\n          \"device_ip\": "...)
			b = strconv.AppendQuote(b, d.DeviceIp)
			b = append(b, ",\n          \"rank_id\": "...)
			b = strconv.AppendQuote(b, d.RankId)
			b = append(b, "\n        }"...)
		}
		b = append(b, "\n      ]\n    }"...)
	}
	b = append(b, "\n  ],\n  \"status\": \""...)
	b = append(b, t.Status...)
	return append(b, "\"\n}\n"...)
}

// renderSimple renders the design's simplified template.
func renderSimple(b []byte, t *Table) []byte {
	b = append(b, "{\n  \"server_count\": \""...)
	b = strconv.AppendInt(b, int64(t.ServerCount), 10)
	b = append(b, "\",\n  \"server_list\": ["...)
	for i := range t.Servers {
		s := &t.Servers[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    {\n      \"server_id\": "...)
		b = strconv.AppendQuote(b, s.ServerId)
		b = append(b, ",\n      \"device\": ["...)
		for j := range s.Devices {
			d := &s.Devices[j]
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n        {\"device_id\": "...)
			b = strconv.AppendQuote(b, d.DeviceId)
			b = append(b, ", \"rank_id\": "...)
			b = strconv.AppendQuote(b, d.RankId)
			b = append(b, '}')
		}
		b = append(b, "\n      ]\n    }"...)
	}
	return append(b, "\n  ]\n}\n"...)
}
