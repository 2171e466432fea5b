package operator

import (
	"fmt"
	"regexp"
	"strings"
)

// imageRef is the image reference grammar of the OCI distribution spec (as
// github.com/distribution/reference parses it): an optional registry host with
// port, a lower-case path, an optional tag and an optional digest.
var imageRef = regexp.MustCompile(`^` +
	`(?:(?P<host>(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?)/)?` +
	`(?P<path>[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)` +
	`(?::(?P<tag>[\w][\w.-]{0,127}))?` +
	`(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$`)

// CheckImage reports whether ref is an image reference the operator may inject:
// well-formed, and pinned by a digest (name@sha256:..., with or without a tag) or by
// a tag other than "latest". An image that changes under a running cluster would
// make two pods of one rollout run different code.
func CheckImage(ref string) error {
	if ref == "" {
		return nil // the default applies
	}
	m := imageRef.FindStringSubmatch(ref)
	if m == nil {
		return fmt.Errorf("%q is not an image reference", ref)
	}
	tag, digest := m[imageRef.SubexpIndex("tag")], m[imageRef.SubexpIndex("digest")]
	switch {
	case digest != "":
		if algo, hex, _ := strings.Cut(digest, ":"); algo == "sha256" && len(hex) != 64 {
			return fmt.Errorf("%q: a sha256 digest has 64 hex digits, not %d", ref, len(hex))
		}
		return nil
	case tag == "":
		return fmt.Errorf("%q has neither a tag nor a digest: pin it (name@sha256:<digest>, or name:<version>)", ref)
	case tag == "latest":
		return fmt.Errorf("%q: the latest tag moves; pin a version or a digest", ref)
	}
	return nil
}
