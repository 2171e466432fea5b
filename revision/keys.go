package revision

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kplan-dev/kplan/internal/names"
)

// keyDomain is the prefix of every annotation and label key a ConfigMapSet writes on
// pods, as in OpenKruise's implementation.
const keyDomain = "apps.kruise.io"

// keySetPrefix starts the name part of every key.
const keySetPrefix = "configmapset."

// Suffixes of the name part of the pod keys, after the (possibly shortened) set name.
const (
	suffixUpdateRevision           = "updateRevision"
	suffixUpdateRevisionTimestamp  = "updateRevisionTimestamp"
	suffixCurrentRevision          = "currentRevision"
	suffixCurrentRevisionTimestamp = "currentRevisionTimestamp"
	suffixUpdateOrder              = "updateOrder"
)

// maxSetNameInKey is the longest set name used verbatim inside a key: the name part
// of a qualified key is at most 63 characters and the longest suffix is
// ".currentRevisionTimestamp". Longer names are shortened to a prefix plus 8 hex
// digits of their hash (internal/names), so every key stays valid.
const maxSetNameInKey = names.MaxLabelLength - len(keySetPrefix) - len(".") - len(suffixCurrentRevisionTimestamp)

// UpdateOrderValue is the value of the update-order label.
const UpdateOrderValue = "1"

// Keys are the annotation and label keys of one ConfigMapSet on its pods. The scheme,
// for a set named N (shortened to S when longer than 25 characters):
//
//	apps.kruise.io/configmapset.S.updateRevision            wanted revision (controller)
//	apps.kruise.io/configmapset.S.updateRevisionTimestamp   when it was wanted, ms since epoch
//	apps.kruise.io/configmapset.S.currentRevision           revision the pod runs (node side)
//	apps.kruise.io/configmapset.S.currentRevisionTimestamp  when it was marked, ms since epoch
//	apps.kruise.io/configmapset.S.updateOrder=1             label: picked, not yet restarted
type Keys struct {
	// UpdateRevision is the annotation key of the wanted revision (written by the
	// controller).
	UpdateRevision string
	// UpdateRevisionTimestamp is the annotation key of when the wanted revision was
	// written, in milliseconds since the epoch.
	UpdateRevisionTimestamp string
	// CurrentRevision is the annotation key of the revision the pod runs (written by the
	// node side).
	CurrentRevision string
	// CurrentRevisionTimestamp is the annotation key of when the current revision was
	// written, in milliseconds since the epoch.
	CurrentRevisionTimestamp string
	// UpdateOrder is a label key.
	UpdateOrder string
}

// KeysFor returns the keys of the set named setName. It returns an error if setName
// is not a DNS-1123 subdomain (a valid object name); for every valid name all keys are
// valid qualified names.
func KeysFor(setName string) (Keys, error) {
	if errs := validation.IsDNS1123Subdomain(setName); len(errs) > 0 {
		return Keys{}, fmt.Errorf("configmapset name %q: %s", setName, strings.Join(errs, "; "))
	}
	s := names.Fit(setName, maxSetNameInKey)
	k := func(suffix string) string { return keyDomain + "/" + keySetPrefix + s + "." + suffix }
	keys := Keys{
		UpdateRevision:           k(suffixUpdateRevision),
		UpdateRevisionTimestamp:  k(suffixUpdateRevisionTimestamp),
		CurrentRevision:          k(suffixCurrentRevision),
		CurrentRevisionTimestamp: k(suffixCurrentRevisionTimestamp),
		UpdateOrder:              k(suffixUpdateOrder),
	}
	for _, key := range []string{keys.UpdateRevision, keys.UpdateRevisionTimestamp, keys.CurrentRevision, keys.CurrentRevisionTimestamp, keys.UpdateOrder} {
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return Keys{}, fmt.Errorf("configmapset %q: key %q: %s", setName, key, strings.Join(errs, "; "))
		}
	}
	return keys, nil
}

// PodState is a pod's revision state as its annotations hold it. Zero values mean the
// annotation is absent.
type PodState struct {
	// UpdateRevision is the revision the controller wants the pod to run.
	UpdateRevision string
	// UpdateTimestamp is when UpdateRevision was written.
	UpdateTimestamp time.Time
	// CurrentRevision is the revision the node side last confirmed.
	CurrentRevision string
	// CurrentTimestamp is when CurrentRevision was written.
	CurrentTimestamp time.Time
}

// Updated reports whether the pod runs the revision it is asked to run.
func (s PodState) Updated() bool {
	return s.UpdateRevision != "" && s.UpdateRevision == s.CurrentRevision
}

// Read returns the pod's revision state. A timestamp that is not a non-negative
// integer of milliseconds is an error naming the pod and the annotation.
func (k Keys) Read(pod *corev1.Pod) (PodState, error) {
	a := pod.Annotations
	s := PodState{UpdateRevision: a[k.UpdateRevision], CurrentRevision: a[k.CurrentRevision]}
	var err error
	if v, ok := a[k.UpdateRevisionTimestamp]; ok {
		if s.UpdateTimestamp, err = parseTimestamp(v); err != nil {
			return PodState{}, fmt.Errorf("pod %s/%s: annotation %s: %w", pod.Namespace, pod.Name, k.UpdateRevisionTimestamp, err)
		}
	}
	if v, ok := a[k.CurrentRevisionTimestamp]; ok {
		if s.CurrentTimestamp, err = parseTimestamp(v); err != nil {
			return PodState{}, fmt.Errorf("pod %s/%s: annotation %s: %w", pod.Namespace, pod.Name, k.CurrentRevisionTimestamp, err)
		}
	}
	return s, nil
}

// Write stores s into annotations (which must not be nil): non-empty fields are set,
// empty ones removed.
func (k Keys) Write(annotations map[string]string, s PodState) {
	set := func(key, v string) {
		if v == "" {
			delete(annotations, key)
		} else {
			annotations[key] = v
		}
	}
	set(k.UpdateRevision, s.UpdateRevision)
	set(k.CurrentRevision, s.CurrentRevision)
	set(k.UpdateRevisionTimestamp, formatIfSet(s.UpdateTimestamp))
	set(k.CurrentRevisionTimestamp, formatIfSet(s.CurrentTimestamp))
}

func formatIfSet(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return FormatTimestamp(t)
}

// FormatTimestamp writes t as milliseconds since the Unix epoch (Kruise's format).
func FormatTimestamp(t time.Time) string {
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// checkNow returns an error unless now can be written both as an annotation
// timestamp (milliseconds since the Unix epoch, which parseTimestamp reads back) and
// as a status time (RFC 3339, years 0000 to 9999): it must be set and lie between the
// Unix epoch and the end of the year 9999.
func checkNow(now time.Time) error {
	if now.IsZero() {
		return fmt.Errorf("the time Now is required (the zero time would be written as a timestamp no reconcile accepts)")
	}
	if now.Before(time.Unix(0, 0)) || now.After(maxNow) {
		return fmt.Errorf("the time Now, %s, is outside 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z, the times a timestamp can hold", now.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// maxNow is the last time checkNow accepts: the last whole second a status time can
// hold, so that Now rounded up to a second (as lastContainersTimestamp is) still fits.
var maxNow = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// parseTimestamp reads milliseconds since the Unix epoch: decimal digits only, at most
// 18 of them.
func parseTimestamp(s string) (time.Time, error) {
	if s == "" || len(s) > 18 {
		return time.Time{}, fmt.Errorf("%q is not a timestamp in milliseconds", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return time.Time{}, fmt.Errorf("%q is not a timestamp in milliseconds", s)
		}
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a timestamp in milliseconds: %w", s, err)
	}
	return time.UnixMilli(ms).UTC(), nil
}
