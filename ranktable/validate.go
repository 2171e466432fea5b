package ranktable

import (
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Validation limits.
const (
	// maxServerIDLength is the longest server id accepted (HCCL's limit is 64 bytes
	// including the terminating NUL).
	maxServerIDLength = 63
	// maxDeviceID is the largest device id accepted.
	maxDeviceID = 65535
)

// validatePodData checks one pod's parsed annotation. Field names in errors are the
// annotation's JSON names.
func validatePodData(d *PodData) error {
	if d.PodName != "" && len(validation.IsDNS1123Subdomain(d.PodName)) > 0 {
		return fmt.Errorf("pod_name: %q is not a pod name", truncate(d.PodName, 80))
	}
	if d.ServerID == "" {
		return fmt.Errorf("server_id: missing")
	}
	if len(d.ServerID) > maxServerIDLength {
		return fmt.Errorf("server_id: %d characters exceeds the limit of %d", len(d.ServerID), maxServerIDLength)
	}
	if !isSafeID(d.ServerID) {
		return fmt.Errorf("server_id: %q may contain only letters, digits, '.', ':', '_' and '-'", d.ServerID)
	}
	if d.HostIP != "" && !isIP(d.HostIP) {
		return fmt.Errorf("host_ip: %q is not an IP address", truncate(d.HostIP, 80))
	}
	if d.SuperPodID != "" && !isUint32(d.SuperPodID) {
		return fmt.Errorf("super_pod_id: %q is not a non-negative integer", truncate(d.SuperPodID, 80))
	}
	if d.ServerIndex != "" && !isUint32(d.ServerIndex) {
		return fmt.Errorf("server_index: %q is not a non-negative integer", truncate(d.ServerIndex, 80))
	}
	if len(d.Devices) == 0 {
		return fmt.Errorf("devices: empty")
	}
	for i, dev := range d.Devices {
		if !isSmallInt(dev.ID) {
			return fmt.Errorf("devices[%d].device_id: %q is not an integer in 0..%d", i, truncate(dev.ID, 80), maxDeviceID)
		}
		if !isIP(dev.IP) {
			return fmt.Errorf("devices[%d].device_ip: %q is not an IP address", i, truncate(dev.IP, 80))
		}
		if dev.SuperDeviceID != "" && !isUint32(dev.SuperDeviceID) {
			return fmt.Errorf("devices[%d].super_device_id: %q is not a non-negative integer", i, truncate(dev.SuperDeviceID, 80))
		}
		for j := 0; j < i; j++ {
			if d.Devices[j].ID == dev.ID {
				return fmt.Errorf("devices[%d].device_id: %q repeats devices[%d]", i, dev.ID, j)
			}
		}
	}
	return nil
}

// isSafeID reports whether s holds only characters that need no escaping in JSON,
// YAML or a shell word.
func isSafeID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == ':' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// isSmallInt reports whether s is a canonical decimal integer in 0..MaxDeviceID.
func isSmallInt(s string) bool {
	if s == "" || len(s) > 5 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n <= maxDeviceID
}

// isUint32 reports whether s is a canonical decimal integer that fits in 32 bits
// (super device ids are large: 37748736 and up).
func isUint32(s string) bool {
	if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	n := uint64(0)
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		n = n*10 + uint64(s[i]-'0')
	}
	return n <= 1<<32-1
}

// isIP accepts a specified IPv4 or IPv6 address without a zone, in canonical form.
func isIP(s string) bool {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" || a.IsUnspecified() {
		return false
	}
	var buf [64]byte // the longest form, IPv4-mapped IPv6, has 45 characters
	return string(a.AppendTo(buf[:0])) == s
}

func isConfigMapKey(s string) bool { return len(validation.IsConfigMapKey(s)) == 0 }

// isDNSLabel is validation.IsDNS1123Label without its regexp, which allocates now
// and then (Plan checks the owner's namespace on every call).
func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123LabelMaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

func isDNSSubdomain(s string) bool { return len(validation.IsDNS1123Subdomain(s)) == 0 }

func isQualifiedName(s string) bool { return len(validation.IsQualifiedName(s)) == 0 }
