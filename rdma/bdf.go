package rdma

import (
	"fmt"
	"strconv"
)

// maxBDFDomain is the largest PCI domain a BDF may name: five hex digits, as Intel VMD
// domains (10000 and up) use.
const maxBDFDomain = 0xfffff

// BDF is a PCI address, domain:bus:device.function. The zero value is 0000:00:00.0.
// BDFs compare numerically (domain, then bus, device, function), never as strings.
type BDF struct {
	Domain   uint32 // 0..0xfffff
	Bus      uint8  // 0..0xff
	Device   uint8  // 0..0x1f
	Function uint8  // 0..7
}

// ParseBDF parses "dddd:bb:dd.f" with a 4 or 5 hex digit domain, a 2 digit bus, a 2
// digit device (at most 0x1f) and a 1 digit function (at most 7). Upper-case hex and a
// zero-padded 5 digit domain are accepted and normalised by String; anything else is an
// error that quotes the input.
func ParseBDF(s string) (BDF, error) {
	fail := func(why string) (BDF, error) {
		return BDF{}, fmt.Errorf("%q is not a PCI address (domain:bus:device.function like 0000:3b:00.0): %s", s, why)
	}
	// Layout: D{4,5} ':' BB ':' DD '.' F
	n := len(s)
	if n != 12 && n != 13 {
		return fail("wrong length")
	}
	dl := n - 8
	if s[dl] != ':' || s[dl+3] != ':' || s[dl+6] != '.' {
		return fail("separators must be ':' ':' '.'")
	}
	dom, ok := hexField(s[:dl])
	if !ok {
		return fail("domain is not hex")
	}
	bus, ok := hexField(s[dl+1 : dl+3])
	if !ok {
		return fail("bus is not hex")
	}
	dev, ok := hexField(s[dl+4 : dl+6])
	if !ok {
		return fail("device is not hex")
	}
	if dev > 0x1f {
		return fail("device is above 1f")
	}
	fn, ok := hexField(s[dl+7:])
	if !ok {
		return fail("function is not hex")
	}
	if fn > 7 {
		return fail("function is above 7")
	}
	return BDF{Domain: dom, Bus: uint8(bus), Device: uint8(dev), Function: uint8(fn)}, nil
}

// hexField parses a short run of hex digits (either case) without sign or prefix.
func hexField(s string) (uint32, bool) {
	var v uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | uint32(d)
	}
	return v, len(s) > 0
}

// String formats the address in lower case with a 4 digit domain, or 5 digits when the
// domain needs them: "0000:3b:00.0", "10001:80:05.0".
func (b BDF) String() string {
	buf := make([]byte, 0, 13)
	buf = appendHex(buf, uint64(b.Domain&maxBDFDomain), 4)
	buf = append(buf, ':')
	buf = appendHex(buf, uint64(b.Bus), 2)
	buf = append(buf, ':')
	buf = appendHex(buf, uint64(b.Device), 2)
	buf = append(buf, '.')
	buf = appendHex(buf, uint64(b.Function), 1)
	return string(buf)
}

func appendHex(buf []byte, v uint64, width int) []byte {
	s := strconv.FormatUint(v, 16)
	for i := len(s); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// Compare orders addresses numerically: -1 if b sorts before o, 1 after, 0 equal.
func (b BDF) Compare(o BDF) int {
	x, y := b.key(), o.key()
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func (b BDF) key() uint64 {
	return uint64(b.Domain)<<24 | uint64(b.Bus)<<16 | uint64(b.Device)<<8 | uint64(b.Function)
}
