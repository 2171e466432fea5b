// Package natural orders strings the way people read them: runs of ASCII digits
// compare by numeric value, so "dev9" < "dev10" and "192.168.1.9" < "192.168.1.10".
//
// Rules:
//   - Non-digit bytes compare bytewise.
//   - Digit runs compare by value, without converting to an integer (no overflow for
//     runs of any length).
//   - Runs equal in value but different in leading zeros ("01" and "1") are ordered by
//     fewer leading zeros first, decided at the first such run, only when the rest of
//     the strings are equal.
//   - Compare(a, b) == 0 exactly when a == b, so the order is total and sorting with it
//     is deterministic.
package natural

import "strings"

// Compare returns -1, 0 or +1 as a sorts before, equal to, or after b.
func Compare(a, b string) int {
	zeroTie := 0
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			ei, ej := digitRunEnd(a, i), digitRunEnd(b, j)
			ra, rb := a[i:ei], b[j:ej]
			ta, tb := strings.TrimLeft(ra, "0"), strings.TrimLeft(rb, "0")
			if len(ta) != len(tb) {
				return sign(len(ta) - len(tb))
			}
			if c := strings.Compare(ta, tb); c != 0 {
				return c
			}
			if zeroTie == 0 && len(ra) != len(rb) {
				zeroTie = sign(len(ra) - len(rb))
			}
			i, j = ei, ej
			continue
		}
		if ca != cb {
			return sign(int(ca) - int(cb))
		}
		i++
		j++
	}
	if rest := (len(a) - i) - (len(b) - j); rest != 0 {
		return sign(rest)
	}
	if zeroTie != 0 {
		return zeroTie
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func digitRunEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
