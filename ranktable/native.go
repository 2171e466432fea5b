// Native renderers of the library templates: hand-written Go that writes, byte for
// byte, what text/template writes for the library's template texts (a property test
// compares them on arbitrary tables).

package ranktable

import (
	"encoding/json"
	"strconv"
	"strings"
)

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
	j, _ := json.Marshal(s) // a string always marshals
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
