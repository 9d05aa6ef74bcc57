// Package wording holds the small phrasings tfhive's messages share across
// packages: "1 task" or "3 tasks", the first line of a longer text. It
// lives here, below the probe, so that every package that talks to the
// user (probe, its transport, the launcher and its commands) can share it
// without breaking the one-way flow probe -> schedule -> launcher.
//
// It imports only the standard library, and no package of tfhive.
package wording

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Count says n of what, "1 GPU" or "2 GPUs": what is a noun whose plural
// takes an "s".
func Count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// FirstLine is s up to its first newline: a message of one line standing
// for a longer text (stderr, a wrapped error, a setup script).
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// OneLine is s with every character that is not printable (a control
// character, a newline or tab, a bidi control, a byte that is not UTF-8)
// written as Go's %q writes it, without the quotes: an error line that
// names what the user gave stays one line, and inert on a terminal.
func OneLine(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16) + strconv.FormatUint(uint64(s[i])&0xf, 16))
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
