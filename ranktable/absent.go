package ranktable

import (
	"strconv"
	"strings"
)

// absentMembers names the expected members of group k that have no pod: see
// GroupStatus.Absent.
func absentMembers(namespace string, k GroupKey, level Level, g Grouping, refs []podRef, expected int) []string {
	n := min(expected-len(refs), maxAbsentNamed)
	if n <= 0 {
		return nil
	}
	held := make(map[int]bool, len(refs))
	var out []string
	// at reports the members not in held among 0..expected-1, up to n of them.
	at := func(name func(i int) string) []string {
		for i := 0; len(out) < n && i < expected; i++ {
			if !held[i] {
				out = append(out, name(i))
			}
		}
		return out
	}
	if prefix := k.Group + "-" + k.Role + "-"; level == LevelRole && k.Group != "" && k.Role != "" && g == (Grouping{OwnerLabel: g.OwnerLabel}).withDefaults() {
		named := true
		for _, r := range refs {
			name := r.pod.Name
			if !strings.HasPrefix(name, prefix) || !isSmallInt(name[len(prefix):]) {
				named = false
				break
			}
			i, _ := strconv.Atoi(name[len(prefix):])
			held[i] = true
		}
		if named {
			return at(func(i int) string { return namespace + "/" + prefix + strconv.Itoa(i) })
		}
		clear(held)
	}
	for _, r := range refs {
		i := rankIndex(r.pod)
		if i < 0 {
			return nil
		}
		held[i] = true
	}
	if len(refs) == 0 {
		return nil
	}
	return at(func(i int) string { return AnnotationRankIndex + "=" + strconv.Itoa(i) })
}

func absentText(absent []string) string {
	if len(absent) == 0 {
		return ""
	}
	return "; absent: " + strings.Join(absent, ", ")
}
