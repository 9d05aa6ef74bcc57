package hosts

import (
	"net"
	"regexp"
	"strconv"
	"strings"
)

// hostSpec is `[user@]host[:port]` as written on the command line or in a
// hosts file's address field. Zero Port and empty User mean "not given".
type hostSpec struct {
	User string
	Host string
	Port int
}

// A host name, alias or IPv4 address; IPv6 literals are checked with
// net.ParseIP. Anything else (spaces, shell metacharacters) is refused early
// because it ends up in known_hosts lookups, ssh_config matching and output.
var hostNameRE = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$`)

var userRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*\$?$`)

func parseHostSpec(s string) (hostSpec, error) {
	var hs hostSpec
	rest := strings.TrimSpace(s)
	if rest == "" {
		return hs, configErrorf("empty host")
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		hs.User, rest = rest[:i], rest[i+1:]
		if !userRE.MatchString(hs.User) {
			return hs, configErrorf("host %q: bad user name %q", s, hs.User)
		}
	}
	switch {
	case strings.HasPrefix(rest, "["):
		// [v6]:port or [host]:port, as in OpenSSH and known_hosts.
		end := strings.Index(rest, "]")
		if end < 0 {
			return hs, configErrorf("host %q: missing ]", s)
		}
		hs.Host, rest = rest[1:end], rest[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return hs, configErrorf("host %q: expected :port after ]", s)
			}
			p, err := parsePort(rest[1:])
			if err != nil {
				return hs, configErrorf("host %q: %v", s, err)
			}
			hs.Port = p
		}
	case strings.Count(rest, ":") > 1:
		hs.Host = rest // a bare IPv6 address has no port
	default:
		if h, p, ok := strings.Cut(rest, ":"); ok {
			port, err := parsePort(p)
			if err != nil {
				return hs, configErrorf("host %q: %v", s, err)
			}
			hs.Host, hs.Port = h, port
		} else {
			hs.Host = rest
		}
	}
	if !hostNameRE.MatchString(hs.Host) && net.ParseIP(hs.Host) == nil {
		return hs, configErrorf("host %q: %q is not a host name or IP address", s, hs.Host)
	}
	return hs, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, configErrorf("bad port %q (want 1-65535)", s)
	}
	return p, nil
}

// splitHostFlags accepts -H given several times and comma-separated lists
// (a comma inside a range's brackets, h[1-3,7], is the range's).
func splitHostFlags(values []string) []string {
	var out []string
	for _, v := range values {
		for _, part := range splitHostList(v) {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}
