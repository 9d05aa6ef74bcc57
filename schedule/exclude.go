package schedule

import (
	"slices"
	"strconv"
	"strings"
)

// Exclusions are GPUs the user took out with --exclude, by host Name. A host
// whose slice is empty (nil or not) is excluded whole; look it up with the
// two-value form, since a missing host also yields nil.
type Exclusions map[string][]int

// ParseExclude reads --exclude values. The flag may be repeated, and each
// value is a comma-separated list of items:
//
//	item    = host [ ":" indices ]
//	indices = index { "," index }        index = N | N "-" M
//
// A comma is ambiguous ("gpu01:0,1,gpu02"): a token made only of digits and
// an optional "-" continues the index list of the item before it, anything
// else starts a new host. So "gpu01:0,1,gpu02" is GPUs 0 and 1 of gpu01 plus
// all of gpu02, and "gpu01,3" is an error rather than a guess. Host names
// that are only digits cannot be written, which costs nothing in practice.
// An IPv6 literal is written in brackets ("[fe80::1]:0"); a bare host with
// more than one colon is taken whole as an IPv6 address. A host whose name
// carries its port (10.0.0.5:2222, see hosts.displayName) is read by its
// name, one of hostNames: "10.0.0.5:2222" is that host whole,
// "10.0.0.5:2222:0,1" its GPUs 0 and 1.
//
// Naming a host twice merges its indices; excluding it whole wins.
func ParseExclude(specs, hostNames []string) (Exclusions, error) {
	ex := Exclusions{}
	for _, spec := range specs {
		host := "" // the item indices are added to; "" before the first host
		for tok := range strings.SplitSeq(spec, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" {
				return nil, usageErr("write --exclude host or --exclude host:0,1", "bad --exclude %q: empty item", spec)
			}
			if isIndexToken(tok) {
				if host == "" {
					return nil, usageErr("write --exclude host:0,1 for some GPUs of a host", "bad --exclude %q: GPU index %s has no host: before it", spec, tok)
				}
				idx, err := parseIndexToken(spec, tok)
				if err != nil {
					return nil, err
				}
				ex.add(host, idx)
				continue
			}
			name, list, err := splitHostItem(spec, tok, hostNames)
			if err != nil {
				return nil, err
			}
			host = name
			if list == "" {
				ex.add(name, nil)
				host = "" // a whole-host item takes no index tokens after it
				continue
			}
			idx, err := parseIndexToken(spec, list)
			if err != nil {
				return nil, err
			}
			ex.add(name, idx)
		}
	}
	return ex, nil
}

// add merges indices into host's entry; nil idx means the whole host.
func (e Exclusions) add(host string, idx []int) {
	cur, seen := e[host]
	switch {
	case seen && len(cur) == 0:
		// already whole
	case idx == nil:
		e[host] = []int{}
	default:
		merged := append(slices.Clone(cur), idx...)
		slices.Sort(merged)
		e[host] = slices.Compact(merged)
	}
}

// Whole reports whether host is excluded with all its GPUs.
func (e Exclusions) Whole(host string) bool {
	idx, ok := e[host]
	return ok && len(idx) == 0
}

// Has reports whether GPU index of host is excluded.
func (e Exclusions) Has(host string, index int) bool {
	idx, ok := e[host]
	return ok && (len(idx) == 0 || slices.Contains(idx, index))
}

// Validate rejects hosts that are not in hostNames: a typo in --exclude would
// otherwise silently exclude nothing.
func (e Exclusions) Validate(hostNames []string) error {
	names := make([]string, 0, len(e))
	for h := range e {
		names = append(names, h)
	}
	slices.Sort(names) // report the same one every time
	for _, h := range names {
		if !slices.Contains(hostNames, h) {
			return usageErr("known hosts: "+strings.Join(hostNames, ", "), "--exclude %s: unknown host", h)
		}
	}
	return nil
}

func isIndexToken(s string) bool {
	return strings.Trim(s, "0123456789-") == "" && strings.ContainsAny(s, "0123456789")
}

// splitHostItem splits "host" or "host:list" (see ParseExclude for IPv6
// and names with a port).
func splitHostItem(spec, tok string, hostNames []string) (host, list string, err error) {
	if slices.Contains(hostNames, tok) {
		return tok, "", nil
	}
	if i := strings.LastIndex(tok, ":"); i > 0 && slices.Contains(hostNames, tok[:i]) && isIndexToken(tok[i+1:]) {
		return tok[:i], tok[i+1:], nil
	}
	if strings.HasPrefix(tok, "[") {
		end := strings.Index(tok, "]")
		if end < 0 {
			return "", "", usageErr("", "bad --exclude %q: missing ] in %s", spec, tok)
		}
		host, rest := tok[1:end], tok[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if !strings.HasPrefix(rest, ":") || rest == ":" {
			return "", "", usageErr("write --exclude [addr]:0,1", "bad --exclude %q: unexpected %q after ]", spec, rest)
		}
		return host, rest[1:], nil
	}
	if strings.Count(tok, ":") > 1 {
		return tok, "", nil
	}
	host, list, found := strings.Cut(tok, ":")
	if host == "" || (found && list == "") {
		return "", "", usageErr("write --exclude host or --exclude host:0,1", "bad --exclude %q: %q", spec, tok)
	}
	return host, list, nil
}

// parseIndexToken reads "3" or "0-3".
func parseIndexToken(spec, tok string) ([]int, error) {
	bad := func() error {
		return usageErr("GPU indices are numbers like 3 or ranges like 0-3", "bad --exclude %q: bad GPU index %q", spec, tok)
	}
	loS, hiS, isRange := strings.Cut(tok, "-")
	lo, err := strconv.Atoi(loS)
	if err != nil || lo < 0 {
		return nil, bad()
	}
	hi := lo
	if isRange {
		if hi, err = strconv.Atoi(hiS); err != nil || hi < lo {
			return nil, bad()
		}
	}
	if hi-lo > 1024 { // no host has that many GPUs; refuse to allocate a huge slice
		return nil, bad()
	}
	idx := make([]int, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		idx = append(idx, i)
	}
	return idx, nil
}
