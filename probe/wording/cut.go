package wording

import "unicode/utf8"

// Cut cuts v to at most n bytes, at a character's start, so that a cut
// value stays valid UTF-8.
func Cut[T ~string | ~[]byte](v T, n int) T {
	if len(v) <= n {
		return v
	}
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n]
}
