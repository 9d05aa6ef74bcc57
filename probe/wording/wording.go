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
