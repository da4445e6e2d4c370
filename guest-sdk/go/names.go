package kubewasm

import (
	"fmt"
	"strings"
)

// The Kubernetes name rules and Rust's `{:?}` quoting, shared by the manifest check and
// the response check so that their messages are the host's, word for word.

func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func isDNSSubdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if !isDNSLabel(label) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isQualifiedName is `[prefix/]name`, as label and annotation keys.
func isQualifiedName(key string) bool {
	prefix, name := "", key
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		prefix, name = key[:i], key[i+1:]
	}
	if key != name && !isDNSSubdomain(prefix) {
		return false
	}
	if len(name) == 0 || len(name) > 63 || !isAlnum(name[0]) || !isAlnum(name[len(name)-1]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isLabelValue(v string) bool {
	return v == "" || (isQualifiedName(v) && !strings.Contains(v, "/"))
}

// debug quotes s as Rust's `{:?}` prints a string (for the characters plugins use:
// printable text is kept; quotes, backslashes and control characters are escaped).
func debug(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\n':
			b.WriteString(`\n`)
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case 0:
			b.WriteString(`\0`)
		default:
			if r < 0x20 || (r >= 0x7f && r < 0xa0) {
				fmt.Fprintf(&b, `\u{%x}`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
