package revision

import (
	"fmt"
	"iter"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplan-dev/kplan/internal/budget"
)

// Validate checks a ConfigMapSet: its name (keys are built from it) and its spec.
func Validate(set *ConfigMapSet) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(set.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), set.Name, msg))
	}
	return append(errs, ValidateSpec(&set.Spec, field.NewPath("spec"))...)
}

// ValidateSpec checks a spec and returns every problem with its field path:
//
//   - selector is set and not empty (an empty selector matches every pod);
//   - data keys are valid ConfigMap keys;
//   - containers is not empty; each entry has exactly one of name (a DNS-1123 label)
//     and nameFrom (fieldRef metadata.labels['k'] or metadata.annotations['k']);
//     mountPath is absolute, clean, without ".." or ":"; no container/path pair twice;
//   - revisionHistoryLimit is not negative;
//   - partition is an integer >= 0 or a percent 0%..100%;
//   - maxUnavailable is an integer >= 1 or a percent 1%..100%;
//   - restartMethod is empty, Signal or External;
//   - type is empty, RollingUpdate or External; with External, partition and
//     maxUnavailable are unset (the pods' owner picks the pods, under its own
//     budget).
func ValidateSpec(spec *ConfigMapSetSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Selector == nil {
		errs = append(errs, field.Required(p.Child("selector"), "pods to manage"))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
		if len(spec.Selector.MatchLabels) == 0 && len(spec.Selector.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(p.Child("selector"), "{}", "empty selector would match every pod"))
		}
	}
	for k := range sortedKeys(spec.Data) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(p.Child("data").Key(k), k, msg))
		}
	}
	errs = append(errs, validateContainers(spec.Containers, p.Child("containers"))...)
	if l := spec.RevisionHistoryLimit; l != nil && *l < 0 {
		errs = append(errs, field.Invalid(p.Child("revisionHistoryLimit"), *l, "must not be negative"))
	}
	us := p.Child("updateStrategy")
	if v := spec.UpdateStrategy.Partition; v != nil {
		errs = append(errs, validateIntOrPercent(*v, 0, us.Child("partition"))...)
	}
	if v := spec.UpdateStrategy.MaxUnavailable; v != nil {
		errs = append(errs, validateIntOrPercent(*v, 1, us.Child("maxUnavailable"))...)
	}
	switch t := spec.UpdateStrategy.Type; t {
	case "", RollingUpdate:
	case ExternalUpdate:
		if spec.UpdateStrategy.Partition != nil {
			errs = append(errs, field.Forbidden(us.Child("partition"), "must be unset when type is External: the pods' owner picks the pods to update"))
		}
		if spec.UpdateStrategy.MaxUnavailable != nil {
			errs = append(errs, field.Forbidden(us.Child("maxUnavailable"), "must be unset when type is External: the pods' owner updates pods under its own budget"))
		}
	default:
		errs = append(errs, field.NotSupported(us.Child("type"), t, []UpdateStrategyType{RollingUpdate, ExternalUpdate}))
	}
	switch m := spec.UpdateStrategy.RestartMethod; m {
	case "", RestartSignal, RestartExternal:
	default:
		errs = append(errs, field.NotSupported(us.Child("restartMethod"), m, []RestartMethod{RestartSignal, RestartExternal}))
	}
	return errs
}

func validateIntOrPercent(v intstr.IntOrString, lowest int, p *field.Path) field.ErrorList {
	if v.Type == intstr.Int {
		if int(v.IntVal) < lowest {
			return field.ErrorList{field.Invalid(p, v.IntVal, fmt.Sprintf("must be at least %d", lowest))}
		}
		return nil
	}
	pct, err := budget.ParsePercent(v.StrVal)
	if err != nil {
		return field.ErrorList{field.Invalid(p, v.StrVal, err.Error())}
	}
	if pct < lowest || pct > 100 {
		return field.ErrorList{field.Invalid(p, v.StrVal, fmt.Sprintf("must be between %d%% and 100%%", lowest))}
	}
	return nil
}

func validateContainers(cs []ContainerInjectSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(cs) == 0 {
		errs = append(errs, field.Required(p, "at least one container to mount the files into"))
	}
	seen := map[string]int{}
	for i, c := range cs {
		ip := p.Index(i)
		var who string
		switch {
		case c.Name != "" && c.NameFrom != nil:
			errs = append(errs, field.Invalid(ip, c.Name, "set name or nameFrom, not both"))
		case c.Name != "":
			who = "name=" + c.Name
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(ip.Child("name"), c.Name, msg))
			}
		case c.NameFrom != nil:
			fp := ip.Child("nameFrom", "fieldRef")
			if v := c.NameFrom.FieldRef.APIVersion; v != "" && v != "v1" {
				errs = append(errs, field.NotSupported(fp.Child("apiVersion"), v, []string{"v1"}))
			}
			if _, _, err := parseFieldPath(c.NameFrom.FieldRef.FieldPath); err != nil {
				errs = append(errs, field.Invalid(fp.Child("fieldPath"), c.NameFrom.FieldRef.FieldPath, err.Error()))
			}
			who = "fieldPath=" + c.NameFrom.FieldRef.FieldPath
		default:
			errs = append(errs, field.Required(ip, "name or nameFrom"))
		}
		mp := ip.Child("mountPath")
		switch {
		case c.MountPath == "":
			errs = append(errs, field.Required(mp, "absolute path"))
		case !strings.HasPrefix(c.MountPath, "/"):
			errs = append(errs, field.Invalid(mp, c.MountPath, "must be absolute"))
		case strings.Contains(c.MountPath, ":"):
			errs = append(errs, field.Invalid(mp, c.MountPath, "must not contain ':'"))
		case path.Clean(c.MountPath) != c.MountPath || strings.Contains(c.MountPath, ".."):
			errs = append(errs, field.Invalid(mp, c.MountPath, "must be a clean path without '..'"))
		}
		if who != "" {
			key := who + " " + c.MountPath
			if j, dup := seen[key]; dup {
				errs = append(errs, field.Duplicate(ip, fmt.Sprintf("same container and mountPath as [%d]", j)))
			} else {
				seen[key] = i
			}
		}
	}
	return errs
}

// fieldPathSource says where a fieldRef reads from.
type fieldPathSource int

const (
	fromLabel fieldPathSource = iota + 1
	fromAnnotation
)

// parseFieldPath parses metadata.labels['<key>'] or metadata.annotations['<key>'] (the
// downward API's syntax); the key must be a qualified name.
func parseFieldPath(fp string) (fieldPathSource, string, error) {
	var src fieldPathSource
	var rest string
	if r, ok := strings.CutPrefix(fp, "metadata.labels['"); ok {
		src, rest = fromLabel, r
	} else if r, ok := strings.CutPrefix(fp, "metadata.annotations['"); ok {
		src, rest = fromAnnotation, r
	} else {
		return 0, "", fmt.Errorf("supported: metadata.labels['<key>'] and metadata.annotations['<key>']")
	}
	key, ok := strings.CutSuffix(rest, "']")
	if !ok || strings.ContainsAny(key, "'[]") {
		return 0, "", fmt.Errorf("must end with '] after the key")
	}
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		return 0, "", fmt.Errorf("key %q: %s", key, strings.Join(msgs, "; "))
	}
	return src, key, nil
}

// resolveContainerName returns the container name c selects in pod; ok is false when
// a nameFrom field is absent from the pod.
func resolveContainerName(pod *corev1.Pod, c ContainerInjectSpec) (string, bool, error) {
	if c.NameFrom == nil {
		return c.Name, true, nil
	}
	src, key, err := parseFieldPath(c.NameFrom.FieldRef.FieldPath)
	if err != nil {
		return "", false, err
	}
	m := pod.Labels
	if src == fromAnnotation {
		m = pod.Annotations
	}
	v, ok := m[key]
	return v, ok && v != "", nil
}

// sortedKeys iterates over m's keys in order, so error lists are deterministic.
func sortedKeys[V any](m map[string]V) iter.Seq[string] {
	return slices.Values(slices.Sorted(maps.Keys(m)))
}
