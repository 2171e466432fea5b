// Package names builds Kubernetes object names and key parts that stay within their
// length limits.
//
// Rules:
//   - Parts are joined with "-". Empty parts are skipped.
//   - A result within the limit is returned unchanged.
//   - A longer result is cut and given a suffix "-" + 8 hex digits of the canonical hash
//     of the whole untruncated name, so two long names that share a prefix stay distinct
//     and the same input always yields the same name.
//   - The cut never leaves '-', '.' or '_' before the suffix, so a result built from
//     valid DNS-1123 parts is still valid.
package names

import (
	"strings"

	"github.com/kplan-dev/kplan/internal/canonhash"
)

const (
	// MaxLabelLength is the limit of a DNS-1123 label (container, volume and
	// Service names, label values, the name part of a qualified key).
	MaxLabelLength = 63
	// maxSubdomainLength is the limit of a DNS-1123 subdomain (ConfigMap and most
	// object names).
	maxSubdomainLength = 253

	hashSuffixLength = 1 + 8
)

// Join joins parts with "-" and fits the result into limit characters as the package
// doc describes. limit must be larger than 9 (a panic otherwise: a programming error).
func Join(limit int, parts ...string) string {
	if limit <= hashSuffixLength {
		panic("names.Join: limit too small for a hash suffix")
	}
	nonEmpty := make([]string, 0, len(parts))
	for _, p := range parts {
		if p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	full := strings.Join(nonEmpty, "-")
	return Fit(full, limit)
}

// Fit returns name unchanged if it fits in limit characters, else a prefix of it plus
// "-" and 8 hex digits of its hash.
func Fit(name string, limit int) string {
	if len(name) <= limit {
		return name
	}
	if limit <= hashSuffixLength {
		panic("names.Fit: limit too small for a hash suffix")
	}
	prefix := strings.TrimRight(name[:limit-hashSuffixLength], "-._")
	return prefix + "-" + canonhash.Short(name)
}

// Label joins parts into a name of at most [MaxLabelLength] characters.
func Label(parts ...string) string { return Join(MaxLabelLength, parts...) }

// Subdomain joins parts into a name of at most [maxSubdomainLength] characters.
func Subdomain(parts ...string) string { return Join(maxSubdomainLength, parts...) }
