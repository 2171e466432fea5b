package ranktable

import "strings"

// fastRanktableJSON decodes the design's annotation
//
//	{"pod_name": "...", "server_id": "...", "devices": [{"device_id": "...", "device_ip": "..."}]}
//
// when it has exactly this plain shape: each key at most once and spelled as above,
// every value a string of printable ASCII without escapes, nothing after the object.
// Strings are substrings of s (no copies). For such input the result equals what
// encoding/json gives (FuzzBuiltinRanktableJSON checks it); ok is false for anything
// else, which the caller decodes with encoding/json.
func fastRanktableJSON(s string) (d PodData, ok bool) {
	p := jsonScan{s: s}
	if !p.object(func(key string) bool {
		switch key {
		case "pod_name":
			if d.PodName != "" {
				return false
			}
			d.PodName, ok = p.str()
		case "server_id":
			if d.ServerID != "" {
				return false
			}
			d.ServerID, ok = p.str()
		case "devices":
			if d.Devices != nil {
				return false
			}
			d.Devices = make([]Device, 0, strings.Count(s[p.i:], "{"))
			ok = p.array(func() bool {
				var dev Device
				okd := p.object(func(key string) bool {
					var ok bool
					switch {
					case key == "device_id" && dev.ID == "":
						dev.ID, ok = p.str()
					case key == "device_ip" && dev.IP == "":
						dev.IP, ok = p.str()
					}
					return ok
				})
				d.Devices = append(d.Devices, dev)
				return okd
			})
		default:
			return false
		}
		return ok
	}) {
		return PodData{}, false
	}
	p.ws()
	if p.i != len(s) {
		return PodData{}, false
	}
	if d.Devices == nil {
		d.Devices = []Device{}
	}
	return d, true
}

// jsonScan reads the plain JSON subset fastRanktableJSON accepts.
type jsonScan struct {
	s string
	i int
}

func (p *jsonScan) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *jsonScan) eat(c byte) bool {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string without escapes and with printable ASCII only. An empty string
// is refused (so "seen" checks can use the empty value; the fallback handles it).
func (p *jsonScan) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '"' {
			p.i++
			return p.s[start : p.i-1], p.i-1 > start
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return "", false
		}
		p.i++
	}
	return "", false
}

// object reads {"key": value, ...}; member reads each value and reports success.
func (p *jsonScan) object(member func(key string) bool) bool {
	if !p.eat('{') {
		return false
	}
	if p.eat('}') {
		return true
	}
	for {
		key, ok := p.str()
		if !ok || !p.eat(':') {
			return false
		}
		p.ws()
		if !member(key) {
			return false
		}
		if p.eat(',') {
			continue
		}
		return p.eat('}')
	}
}

// array reads [elem, ...]; elem reads one element and reports success.
func (p *jsonScan) array(elem func() bool) bool {
	if !p.eat('[') {
		return false
	}
	if p.eat(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if p.eat(',') {
			continue
		}
		return p.eat(']')
	}
}
