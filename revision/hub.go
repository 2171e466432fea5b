package revision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kplan-dev/kplan/internal/names"
)

// HubDataKey is the ConfigMap data key that holds the hub's revisions.
const HubDataKey = "revisions"

// MaxHubBytes is the most bytes a hub ConfigMap's data may hold (keys plus values),
// the API server's limit for a ConfigMap.
const MaxHubBytes = corev1.MaxSecretSize

// Revision is one data version in the hub.
type Revision struct {
	// Name is the revision's hash (see RevisionHash).
	Name string `json:"name"`
	// Data is the files: name to content.
	Data map[string]string `json:"data"`
}

// Hub is the ordered history of a set's revisions, oldest first. It is stored in the
// ConfigMap HubName(set) under HubDataKey as a JSON list, because YAML and JSON
// mappings have no order.
type Hub struct {
	// Revisions are the revisions, oldest first; names are unique.
	Revisions []Revision
}

// HubName returns the hub ConfigMap's name for a set: "{name}-hub", hash-shortened to
// 253 characters.
func HubName(setName string) string { return names.Subdomain(setName, "hub") }

func errCollisions(n int32) error {
	return fmt.Errorf("revision hash still collides after %d collision-count bumps", n)
}

// Index returns the position of the named revision (0 is oldest), or -1.
func (h Hub) Index(name string) int {
	for i := range h.Revisions {
		if h.Revisions[i].Name == name {
			return i
		}
	}
	return -1
}

// Files returns a copy of the files of the named revision, as the reload sidecar
// writes them. A revision the hub does not hold is an error. So is a file name that
// is not a valid ConfigMap key (such as "../etc/passwd", which a hand-edited hub could
// hold): every name Files returns can be joined to the sidecar's data directory
// without leaving it.
//
// The sidecar reads the hub from a ConfigMap volume, which the kubelet refreshes
// only every sync period (about a minute), while Plan adds a revision to the hub and
// asks pods for it in the same reconcile. A sidecar whose wanted revision is not in
// the hub should therefore re-read the file until the revision appears
// rather than exit (exiting would put it in CrashLoopBackOff).
func (h Hub) Files(name string) (map[string]string, error) {
	i := h.Index(name)
	if i < 0 {
		return nil, fmt.Errorf("revision %q is not in the hub (it holds %d revisions)", name, len(h.Revisions))
	}
	if err := checkFileNames(h.Revisions[i].Data); err != nil {
		return nil, fmt.Errorf("revision %q: %w", name, err)
	}
	out := make(map[string]string, len(h.Revisions[i].Data))
	for k, v := range h.Revisions[i].Data {
		out[k] = v
	}
	return out, nil
}

// Trim drops the oldest revisions that are not live until at most limit non-live
// revisions remain; live revisions never count and are never dropped. Order is kept.
// It returns the new hub and the dropped names, oldest first; the receiver is not
// changed.
func (h Hub) Trim(limit int, live func(name string) bool) (Hub, []string) {
	if limit < 0 {
		limit = 0
	}
	nonLive := 0
	for _, r := range h.Revisions {
		if !live(r.Name) {
			nonLive++
		}
	}
	drop := nonLive - limit
	if drop <= 0 {
		return h, nil
	}
	kept := make([]Revision, 0, len(h.Revisions)-drop)
	var dropped []string
	for _, r := range h.Revisions {
		if drop > 0 && !live(r.Name) {
			drop--
			dropped = append(dropped, r.Name)
			continue
		}
		kept = append(kept, r)
	}
	return Hub{Revisions: kept}, dropped
}

// Encode returns the hub's stored form: a JSON list of {"name","data"} objects, oldest
// first, with data keys sorted. The same hub always encodes to the same bytes. A file
// name that is not a valid ConfigMap key is an error, as DecodeHub would reject it.
func (h Hub) Encode() (string, error) {
	revs := h.Revisions
	if revs == nil {
		revs = []Revision{}
	}
	for i := range revs {
		if err := checkFileNames(revs[i].Data); err != nil {
			return "", fmt.Errorf("revision [%d] %q: %w", i, revs[i].Name, err)
		}
	}
	for i := range revs {
		if revs[i].Data == nil {
			// A set without data is a revision with no files: store {} (DecodeHub
			// rejects a null data), on a copy so the receiver is not changed.
			revs = slices.Clone(revs)
			for j := i; j < len(revs); j++ {
				if revs[j].Data == nil {
					revs[j].Data = map[string]string{}
				}
			}
			break
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(revs); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// DecodeHub reads a hub from its ConfigMap. A nil ConfigMap is an empty hub. Missing
// or corrupt content (not a JSON list, unknown fields, a revision without a valid
// name or data, a name twice, a file name that is not a valid ConfigMap key such as
// "../etc/passwd") is an error naming the ConfigMap and the field.
func DecodeHub(cm *corev1.ConfigMap) (Hub, error) {
	if cm == nil {
		return Hub{}, nil
	}
	where := fmt.Sprintf("configmap %s/%s: data.%s", cm.Namespace, cm.Name, HubDataKey)
	raw, ok := cm.Data[HubDataKey]
	if !ok {
		return Hub{}, fmt.Errorf("%s: missing", where)
	}
	h, err := decodeRevisions(raw)
	if err != nil {
		return Hub{}, fmt.Errorf("%s: %w", where, err)
	}
	return h, nil
}

func decodeRevisions(raw string) (Hub, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var revs []*struct {
		Name *string           `json:"name"`
		Data map[string]string `json:"data"`
	}
	if err := dec.Decode(&revs); err != nil {
		return Hub{}, fmt.Errorf("not a JSON list of revisions: %w", err)
	}
	if dec.More() {
		return Hub{}, errors.New("trailing data after the list of revisions")
	}
	if revs == nil {
		return Hub{}, errors.New("not a JSON list of revisions: null")
	}
	h := Hub{Revisions: make([]Revision, 0, len(revs))}
	seen := make(map[string]int, len(revs))
	for i, r := range revs {
		switch {
		case r == nil:
			return Hub{}, fmt.Errorf("[%d]: null", i)
		case r.Name == nil:
			return Hub{}, fmt.Errorf("[%d].name: missing", i)
		case len(validation.IsValidLabelValue(*r.Name)) > 0 || *r.Name == "":
			return Hub{}, fmt.Errorf("[%d].name: %q is not a revision name", i, *r.Name)
		case r.Data == nil:
			return Hub{}, fmt.Errorf("[%d].data: missing", i)
		}
		if err := checkFileNames(r.Data); err != nil {
			return Hub{}, fmt.Errorf("[%d].data%w", i, err)
		}
		if j, dup := seen[*r.Name]; dup {
			return Hub{}, fmt.Errorf("[%d].name: %q already at [%d]", i, *r.Name, j)
		}
		seen[*r.Name] = i
		h.Revisions = append(h.Revisions, Revision{Name: *r.Name, Data: r.Data})
	}
	return h, nil
}

// HubConfigMap returns the hub's ConfigMap for the set named setName in namespace.
// When base is not nil its metadata (resourceVersion, labels, owners) is kept, so the
// result can be written with an update. A hub larger than MaxHubBytes is an error that
// names the sizes; nothing is truncated. base is not changed.
func (h Hub) HubConfigMap(namespace, setName string, base *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	enc, err := h.Encode()
	if err != nil {
		return nil, err
	}
	name := HubName(setName)
	if size := len(HubDataKey) + len(enc); size > MaxHubBytes {
		largest, largestSize := "", 0
		for _, r := range h.Revisions {
			s := 0
			for k, v := range r.Data {
				s += len(k) + len(v)
			}
			if s > largestSize {
				largest, largestSize = r.Name, s
			}
		}
		return nil, fmt.Errorf("configmap %s/%s: data would hold %d bytes, more than the %d a ConfigMap may hold: %d revisions, the largest (%s) %d bytes of files; lower revisionHistoryLimit or shrink spec.data",
			namespace, name, size, MaxHubBytes, len(h.Revisions), largest, largestSize)
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}
	if base != nil {
		base.ObjectMeta.DeepCopyInto(&cm.ObjectMeta)
	}
	cm.Namespace, cm.Name = namespace, name
	cm.Data = map[string]string{HubDataKey: enc}
	return cm, nil
}

// checkFileNames returns an error when a key of data cannot be a file of a revision:
// every key must be a valid ConfigMap data key (letters, digits, '-', '_' and '.', at
// most 253 characters, not "." or "..", not starting with ".."), so it never holds a
// path separator and a reload sidecar that joins it to its data directory stays
// inside it. The error names the smallest bad key, so it does not depend on map
// order, as `["key"]: reason`.
func checkFileNames(data map[string]string) error {
	bad, found := "", false
	for k := range data {
		if (!found || k < bad) && len(validation.IsConfigMapKey(k)) > 0 {
			bad, found = k, true
		}
	}
	if !found {
		return nil
	}
	return fmt.Errorf("[%q]: not a valid file name: %s", bad, strings.Join(validation.IsConfigMapKey(bad), "; "))
}

// names lists the revision names, oldest first.
func (h Hub) names() []string {
	out := make([]string, len(h.Revisions))
	for i, r := range h.Revisions {
		out[i] = r.Name
	}
	return out
}
