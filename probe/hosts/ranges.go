package hosts

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MaxRangeHosts caps what one host range expands to: a typo such as
// gpu[1-100000] fails closed instead of dialling (or planning on) a
// hundred thousand hosts.
const MaxRangeHosts = 4096

// maxExpandedHosts caps the hosts all of -H's, or a hosts file's, ranges
// give together: a fleet, some 50,000 hosts (see maxHostsFileSize).
const maxExpandedHosts = 50000

// prefixed is err, a range's ConfigError, said of where the range was
// written ("-H h[1-", "hosts.yaml:4").
func prefixed(where string, err error) error {
	ce, ok := err.(*ConfigError)
	if !ok {
		return err
	}
	return &ConfigError{Msg: where + ": " + ce.Msg, hint: ce.hint}
}

// rangeBodyRE is what pdsh and ClusterShell put between brackets: numbers
// and ranges of numbers, comma-separated ("1-3,7", "01-08").
var rangeBodyRE = regexp.MustCompile(`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`)

// expandRanges expands pdsh/ClusterShell host ranges in a host spec:
// gpu[01-08] is gpu01 … gpu08 (a bound's leading zeros set the width),
// h[1-3,7] is h1 h2 h3 h7, and several brackets multiply
// (rack[1-2]-n[1-2] is rack1-n1 rack1-n2 rack2-n1 rack2-n2). A user@ and
// a :port apply to every host: root@h[1-2]:2222. A spec without a range
// is returned as it is; OpenSSH's [host]:port and [v6]:port, a bracket
// at the host's start whose inside is not a range, are left alone.
func expandRanges(spec string) ([]string, error) {
	host := spec
	if i := strings.LastIndex(spec, "@"); i >= 0 {
		host = spec[i+1:]
	}
	if !strings.ContainsAny(host, "[]") {
		return []string{spec}, nil
	}
	if strings.HasPrefix(host, "[") {
		end := strings.Index(host, "]")
		if end < 0 || !rangeBodyRE.MatchString(host[1:end]) {
			return []string{spec}, nil // [host]:port, [v6]:port: parseHostSpec's
		}
	}
	out := []string{""}
	rest := spec
	for {
		open := strings.Index(rest, "[")
		if open < 0 {
			if strings.Contains(rest, "]") {
				return nil, configErrorf("bad host range: ] without [")
			}
			for i := range out {
				out[i] += rest
			}
			return out, nil
		}
		end := strings.Index(rest[open:], "]")
		if end < 0 {
			return nil, configErrorf("bad host range: [ without ]")
		}
		prefix, body := rest[:open], rest[open+1:open+end]
		if strings.Contains(prefix, "]") || strings.Contains(body, "[") {
			return nil, configErrorf("bad host range: brackets do not nest")
		}
		values, err := rangeValues(body)
		if err != nil {
			return nil, configErrorf("bad host range: %v", err)
		}
		if len(out)*len(values) > MaxRangeHosts {
			return nil, configErrorf("bad host range: more than %d hosts", MaxRangeHosts).
				withHint("list the hosts in a hosts file, or check the range's bounds")
		}
		next := make([]string, 0, len(out)*len(values))
		for _, o := range out {
			for _, v := range values {
				next = append(next, o+prefix+v)
			}
		}
		out, rest = next, rest[open+end+1:]
	}
}

// rangeValues are the numbers a bracket's inside names, as text, zero
// padded to the width of a bound written with leading zeros.
func rangeValues(body string) ([]string, error) {
	if !rangeBodyRE.MatchString(body) {
		return nil, fmt.Errorf("[%s] is not a range (want numbers and ranges, e.g. [1-4,7] or [01-08])", body)
	}
	var out []string
	for _, part := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, errA := strconv.Atoi(lo)
		b, errB := strconv.Atoi(hi)
		if errA != nil || errB != nil {
			return nil, fmt.Errorf("%s is too large", part)
		}
		if a > b {
			return nil, fmt.Errorf("%s runs backwards", part)
		}
		if b-a >= MaxRangeHosts || len(out)+b-a+1 > MaxRangeHosts {
			return nil, fmt.Errorf("more than %d hosts", MaxRangeHosts)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for n := a; n <= b; n++ {
			out = append(out, fmt.Sprintf("%0*d", width, n))
		}
	}
	return out, nil
}

// splitHostList splits a comma-separated host list at the commas outside
// brackets, so that h[1-3,7],g1 is two items.
func splitHostList(v string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range v {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, v[start:i])
				start = i + 1
			}
		}
	}
	return append(out, v[start:])
}
