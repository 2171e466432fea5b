package rollout

// appendNaturalKey appends a byte key for s such that comparing two keys
// bytewise gives natural order (internal/natural.Compare) except between names
// that differ only in leading zeros of a digit run, whose keys are equal (break
// that tie with natural.Compare). Plan builds the keys once per replica so that
// sorting compares bytes instead of re-parsing digit runs in every comparison.
//
// Encoding: a non-digit byte is itself; a digit run is '0' (which compares with
// any non-digit byte the way any digit does), the length of the run without
// leading zeros as 4 bytes big-endian, and those digits. Two runs then compare by
// trimmed length, then digits: by numeric value.
func appendNaturalKey(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < '0' || c > '9' {
			dst = append(dst, c)
			i++
			continue
		}
		j := i
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
		k := i
		for k < j && s[k] == '0' {
			k++
		}
		n := uint32(j - k)
		dst = append(dst, '0', byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		dst = append(dst, s[k:j]...)
		i = j
	}
	return dst
}
