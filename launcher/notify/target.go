package notify

import (
	"fmt"
	"net/url"
	"os/exec"
	"strings"
)

// Target is one --notify TARGET, checked.
type Target struct {
	// url is a webhook's; nil for a command.
	url *url.URL
	// command is a command's text, run by sh -c.
	command string
}

// ParseTarget checks one TARGET as the user wrote it: an http(s) URL
// with a host, or a command whose first word is on $PATH (or a path to
// an executable). The error is one line that never holds the URL whole.
func ParseTarget(s string) (Target, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return Target{}, fmt.Errorf("--notify: empty target")
	}
	scheme, _, hasScheme := strings.Cut(t, "://")
	if hasScheme && !strings.ContainsAny(scheme, " \t/") {
		u, err := url.Parse(t)
		if err != nil {
			// url's error quotes the URL: say only where it failed.
			return Target{}, fmt.Errorf("--notify %s: not a valid URL", redactRaw(t))
		}
		switch strings.ToLower(u.Scheme) {
		case "https", "http":
		default:
			return Target{}, fmt.Errorf("--notify %s: a webhook is an https:// or http:// URL (else give a command)", redactRaw(t))
		}
		if u.Host == "" || u.Hostname() == "" {
			return Target{}, fmt.Errorf("--notify %s: the URL names no host", redactRaw(t))
		}
		return Target{url: u}, nil
	}
	word := strings.Fields(t)[0]
	if strings.ContainsAny(word, `'"$\;|&<>()`+"`") {
		// A shell construct: sh says at the event what it makes of it.
		return Target{command: t}, nil
	}
	if _, err := exec.LookPath(word); err != nil {
		return Target{}, fmt.Errorf("--notify %s: no such command (neither on $PATH nor an executable file); a webhook starts with https:// or http://", word)
	}
	return Target{command: t}, nil
}

// ParseTargets checks every TARGET; none "none" turns notifications
// off (over the hosts file's default).
func ParseTargets(list []string) ([]Target, error) {
	var out []Target
	for _, s := range list {
		if strings.TrimSpace(s) == "none" {
			if len(list) > 1 {
				return nil, fmt.Errorf("--notify none turns notifications off: give it alone")
			}
			return nil, nil
		}
		t, err := ParseTarget(s)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Webhook: the target is a URL.
func (t Target) Webhook() bool { return t.url != nil }

// String is the target as it may be shown or recorded: a webhook as
// scheme://host/… (its path and query, where a Slack or Mattermost hook
// keeps its secret, left out, and any user:password@), a command as its
// first word and "…" when it has more (its arguments may hold a token).
func (t Target) String() string {
	if t.url != nil {
		return redactURL(t.url)
	}
	f := strings.Fields(t.command)
	if len(f) == 1 {
		return f[0]
	}
	return f[0] + " …"
}

func redactURL(u *url.URL) string {
	s := strings.ToLower(u.Scheme) + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		s += "/…"
	}
	return s
}

// redactRaw is a URL that may not parse, redacted alike: its scheme and
// host as far as they can be told, never what follows, nor user:password@.
func redactRaw(s string) string {
	scheme, rest, _ := strings.Cut(s, "://")
	host, tail, more := strings.Cut(rest, "/")
	if _, h, ok := strings.Cut(host, "@"); ok {
		host = h
	}
	if i := strings.IndexAny(host, "?#"); i >= 0 {
		host, more = host[:i], true
	}
	if more && tail != "" || more && strings.ContainsAny(rest, "?#") {
		return scheme + "://" + host + "/…"
	}
	return scheme + "://" + host
}

// RedactArgs is a command line with every --notify value (--notify V,
// --notify=V) shown as Target.String would: for repro.json's args.
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		switch {
		case a == "--notify" && i+1 < len(out):
			out[i+1] = redactValue(out[i+1])
			i++
		case strings.HasPrefix(a, "--notify="):
			out[i] = "--notify=" + redactValue(strings.TrimPrefix(a, "--notify="))
		}
	}
	return out
}

func redactValue(v string) string {
	if t, err := ParseTarget(v); err == nil {
		return t.String()
	}
	if strings.Contains(v, "://") {
		return redactRaw(v)
	}
	if f := strings.Fields(v); len(f) > 1 {
		return f[0] + " …"
	}
	return v
}
