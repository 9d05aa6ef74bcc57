package probe

import (
	"bytes"
	"strings"
	"unicode"
)

// markCode starts the code section (scripts/code.sh): whether the --sync
// tree is on the host, and where.
const markCode = "@@tfhive-code"

// cutCode takes the code section off the end of the interfaces section,
// where the script prints it (its marker alone when no tree was asked
// about). Output without the marker leaves the interfaces as they were.
func cutCode(nic []byte) (addrs, code []byte) {
	i := bytes.LastIndex(nic, []byte("\n"+markCode))
	if i < 0 {
		return nic, nil
	}
	rest := nic[i+1+len(markCode):]
	if len(rest) > 0 && rest[0] != '\n' {
		return nic, nil
	}
	return nic[:i], bytes.TrimPrefix(rest, []byte("\n"))
}

// parseCode reads the code section, "present DIR" or "missing DIR". What
// the host says is checked, not taken on trust: DIR must be an absolute
// path without control characters ending in the hash asked about, or
// there is no answer ("", false).
func parseCode(section []byte, hash string) (dir string, present bool) {
	line, _, _ := strings.Cut(string(section), "\n")
	state, dir, _ := strings.Cut(line, " ")
	if hash == "" || !strings.HasPrefix(dir, "/") || !strings.HasSuffix(dir, "/"+hash) || strings.ContainsFunc(dir, unicode.IsControl) {
		return "", false
	}
	switch state {
	case "present":
		return dir, true
	case "missing":
		return dir, false
	}
	return "", false
}
