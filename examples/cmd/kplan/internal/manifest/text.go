package manifest

import (
	"strconv"
	"strings"
	"unicode"
)

func printable(s string) bool {
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return false
		}
	}
	return true
}

// quote quotes a value from the input for an error message: Go syntax, so newlines
// and control characters never break the message's single line; long values are cut.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// OneLine turns a message into one printable line for a terminal: whitespace runs
// become one space; invalid UTF-8 and other unprintable characters (terminal escape
// sequences among them) are escaped in Go syntax.
func OneLine(s string) string {
	var b strings.Builder
	for _, f := range strings.Fields(strings.ToValidUTF8(s, "\ufffd")) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		for _, c := range f {
			if unicode.IsPrint(c) {
				b.WriteRune(c)
			} else {
				q := strconv.QuoteRune(c)
				b.WriteString(q[1 : len(q)-1])
			}
		}
	}
	return b.String()
}
