package hosts

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
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

// Bounds on what names a host, checked as it is read (-H, a hosts file,
// the ssh config's HostName), as MaxRangeHosts and maxExpandedHosts bound
// how many: a name of 100 KB would otherwise go into every table, every
// dial and every known_hosts lookup.
const (
	// maxHostNameLen is a DNS name's most (RFC 1035: 255 octets on the
	// wire, less the first label's length and the root).
	maxHostNameLen = 253
	// maxUserLen is Linux's LOGIN_NAME_MAX, less its NUL.
	maxUserLen = 256
	// shownMax is the most of a name or spec an error line shows.
	shownMax = 64
)

// quoted is s as an error names it: quoted as %q does (a control or
// bidi character escaped: the line stays one line and inert), and cut to
// its first shownMax characters.
func quoted(s string) string {
	if utf8.RuneCountInString(s) <= shownMax {
		return strconv.Quote(s)
	}
	n := 0
	for i := range s {
		if n == shownMax {
			return strconv.Quote(s[:i] + "…")
		}
		n++
	}
	return strconv.Quote(s)
}

// shown is s as written when it is short and printable, else quoted:
// where a line says it was written (-H gpu01, -H "h1\nh2").
func shown(s string) string {
	if utf8.RuneCountInString(s) > shownMax {
		return quoted(s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) || r == '"' {
			return quoted(s)
		}
	}
	return s
}

// hostNameTooLong says what is wrong with a host name that is longer than
// any: "" when it is not.
func hostNameTooLong(what, s string) string {
	if len(s) <= maxHostNameLen {
		return ""
	}
	return fmt.Sprintf("%s%s (%d characters): longer than a host name's %d", what, quoted(s), len(s), maxHostNameLen)
}

func parseHostSpec(s string) (hostSpec, error) {
	var hs hostSpec
	rest := strings.TrimSpace(s)
	if rest == "" {
		return hs, configErrorf("empty host")
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		hs.User, rest = rest[:i], rest[i+1:]
		if len(hs.User) > maxUserLen {
			return hs, configErrorf("host %s: user name of %d characters: longer than %d", quoted(s), len(hs.User), maxUserLen)
		}
		if !userRE.MatchString(hs.User) {
			return hs, configErrorf("host %s: bad user name %s", quoted(s), quoted(hs.User))
		}
	}
	switch {
	case strings.HasPrefix(rest, "["):
		// [v6]:port or [host]:port, as in OpenSSH and known_hosts.
		end := strings.Index(rest, "]")
		if end < 0 {
			return hs, configErrorf("host %s: missing ]", quoted(s))
		}
		hs.Host, rest = rest[1:end], rest[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return hs, configErrorf("host %s: expected :port after ]", quoted(s))
			}
			p, err := parsePort(rest[1:])
			if err != nil {
				return hs, configErrorf("host %s: %v", quoted(s), err)
			}
			hs.Port = p
		}
	case strings.Count(rest, ":") > 1:
		hs.Host = rest // a bare IPv6 address has no port
	default:
		if h, p, ok := strings.Cut(rest, ":"); ok {
			port, err := parsePort(p)
			if err != nil {
				return hs, configErrorf("host %s: %v", quoted(s), err)
			}
			hs.Host, hs.Port = h, port
		} else {
			hs.Host = rest
		}
	}
	if why := hostNameTooLong("host ", hs.Host); why != "" {
		return hs, configErrorf("%s", why)
	}
	if !hostNameRE.MatchString(hs.Host) && net.ParseIP(hs.Host) == nil {
		return hs, configErrorf("host %s: %s is not a host name or IP address", quoted(s), quoted(hs.Host))
	}
	return hs, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, configErrorf("bad port %s (want 1-65535)", quoted(s))
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
