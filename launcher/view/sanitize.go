package view

import (
	"encoding/binary"
	"unicode/utf8"
)

// Terminal safety. Task output and strings from hosts (GPU names, other
// users' command lines) must not drive the user's terminal: retitle it,
// write its clipboard (OSC 52), move the cursor, clear the screen, switch
// keyboard modes, or hide tfhive's own lines.
//
// The sanitiser does not parse OSC, DCS, APC, PM or SOS strings: it renders
// the ESC that would start them, so the terminal never enters them and the
// rest is plain text. Hence nothing is buffered and an unterminated string
// costs nothing; the only sequence recognised is SGR, complete within the
// text given, which is a console line or a table cell.
//
// Renderings:
//   - C0 controls and DEL in caret notation: ESC is "^[", NUL "^@", BEL
//     "^G", DEL "^?". It is what cat -v, less and the terminal's own echo
//     show, it says which byte it was, and it is printable ASCII;
//   - C1 controls (U+0080-U+009F), the bidi embeddings, overrides and
//     isolates (U+202A-U+202E, U+2066-U+2069: they would reorder what
//     follows on the screen) and every byte that is not part of valid
//     UTF-8 (a raw 0x9B CSI, an overlong encoding) as U+FFFD, one per
//     invalid byte: what a UTF-8 terminal shows for invalid bytes anyway,
//     and none of them has a familiar caret form.
//
// A literal "^[" in the output looks the same as a rendered ESC; the log
// file has the exact bytes.

// sgrMaxParams bounds the parameters of an SGR kept as is. Real ones are
// short ("38;2;255;255;255;48;2;0;0;0" is 27 bytes); a longer one is shown
// inert.
const sgrMaxParams = 64

// SanitizeMode says what the sanitiser may keep.
type SanitizeMode uint8

const (
	// ConsoleMode keeps "\t", "\n" and SGR (colour) sequences.
	ConsoleMode SanitizeMode = iota
	// CellMode keeps no control byte at all: a "\n" in a process name
	// would otherwise forge a table row.
	CellMode
)

// AppendSanitized appends b to dst with every control byte or sequence
// that mode does not keep rendered visibly and inertly, and reports whether
// it kept an SGR sequence (so the caller can reset the colour after it).
// It does not allocate beyond growing dst.
func AppendSanitized(dst, b []byte, mode SanitizeMode) ([]byte, bool) {
	i := safePrefix(b)
	if i == len(b) {
		return append(dst, b...), false
	}
	sgr := false
	start := 0 // b[start:i] is to be copied as is
	for i < len(b) {
		c := b[i]
		switch {
		case c >= 0x20 && c < 0x7f:
			i++
			continue
		case c >= 0x80:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 || r >= 0x80 && r < 0xa0 || bidiControl(r) {
				dst = append(dst, b[start:i]...)
				dst = append(dst, "\uFFFD"...)
				i += n
				start = i
				continue
			}
			i += n
			continue
		case mode == ConsoleMode && (c == '\t' || c == '\n'):
			i++
			continue
		case mode == ConsoleMode && c == 0x1b:
			if n := sgrLen(b[i:]); n > 0 {
				i += n
				sgr = true
				continue
			}
		}
		dst = append(dst, b[start:i]...)
		dst = append(dst, '^', c^0x40)
		i++
		start = i
	}
	return append(dst, b[start:]...), sgr
}

// needsSanitizing reports whether s has a byte the cell mode would change.
func needsSanitizing(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			if c < 0x80 {
				return true
			}
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 || r < 0xa0 || bidiControl(r) {
				return true
			}
			i += n - 1
		}
	}
	return false
}

// SanitizeCell is s made safe for a table cell, s itself (no copy)
// when it already is.
func SanitizeCell(s string) string {
	if !needsSanitizing(s) {
		return s
	}
	b, _ := AppendSanitized(nil, []byte(s), CellMode)
	return string(b)
}

// sgrLen is the length of the SGR sequence ESC "[" params "m" that b starts
// with, params being digits, ";" and ":" only, or 0 if b does not start
// with one. A private marker ("ESC[>4;1m" sets a keyboard mode) or an
// intermediate byte makes it something else.
func sgrLen(b []byte) int {
	if len(b) < 3 || b[0] != 0x1b || b[1] != '[' {
		return 0
	}
	for j := 2; j < len(b) && j-2 <= sgrMaxParams; j++ {
		switch c := b[j]; {
		case c >= '0' && c <= '9' || c == ';' || c == ':':
		case c == 'm':
			return j + 1
		default:
			return 0
		}
	}
	return 0
}

// safePrefix is the length of b's leading run of printable ASCII, checked
// eight bytes at a time: the common line has nothing else, and the console
// must stay about as fast as plain ssh.
func safePrefix(b []byte) int {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// No byte in 0x20-0x7e sets a high bit here; the first byte
		// outside it does (>= 0x80 its own, < 0x20 by borrowing, 0x7f
		// by becoming zero and borrowing). Bytes after it may be
		// flagged wrongly: the loop below finds the first.
		lt := x - 0x20*ones
		del := (x ^ 0x7f*ones) - ones
		if (x|lt|del)&high != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c >= 0x7f {
			break
		}
	}
	return i
}

// bidiControl: U+202A-U+202E (embeddings, overrides) and U+2066-U+2069
// (isolates). They reorder the text after them on the screen: a host's
// "gpu01\u202e..." could show another name, a command line another
// command ("Trojan Source").
func bidiControl(r rune) bool { return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 }
