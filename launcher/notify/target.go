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

// IsCommand says whether TARGET s, as written, is a command to run (not
// a webhook, nor none), and how it may be shown: its first word (see
// Target.String).
func IsCommand(s string) (shown string, ok bool) {
	t := strings.TrimSpace(s)
	if scheme, _, hasScheme := strings.Cut(t, "://"); t == "" || t == "none" || hasScheme && !strings.ContainsAny(scheme, " \t/") {
		return "", false
	}
	return commandShown(t), true
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
	word := ""
	for _, w := range strings.Fields(t) {
		if strings.ContainsAny(w, shellChars) {
			// A shell construct: sh says at the event what it makes of it.
			return Target{command: t}, nil
		}
		if _, ok := assignment(w); !ok {
			word = w
			break
		}
		// VAR=value before the command, as sh takes it: its value (a
		// token, often) is the command's, never shown.
	}
	if word == "" {
		return Target{}, fmt.Errorf("--notify %s: variables set, but no command to run", commandShown(t))
	}
	if _, err := exec.LookPath(word); err != nil {
		return Target{}, fmt.Errorf("--notify %s: no such command (neither on $PATH nor an executable file); a webhook starts with https:// or http://", redactWord(word))
	}
	return Target{command: t}, nil
}

// shellChars make a word sh's to read: quotes, expansions, operators.
const shellChars = `'"$\;|&<>()` + "`"

// assignment: w is NAME=value, as sh reads a word before the command;
// name is NAME.
func assignment(w string) (name string, ok bool) {
	name, _, ok = strings.Cut(w, "=")
	if !ok || name == "" || !(name[0] == '_' || isLetter(name[0])) {
		return "", false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; c != '_' && !isLetter(c) && (c < '0' || c > '9') {
			return "", false
		}
	}
	return name, true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// redactWord is a command's first word that is no command, as an error
// may show it: whole when it reads as a command's name or a path; a
// URL mistyped (https:/host/…, https:host) as its scheme and host; else
// (a token pasted where a command was meant) its first characters.
func redactWord(w string) string {
	if strings.Contains(w, "://") {
		return redactRaw(w)
	}
	plain := true
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !isLetter(c) && (c < '0' || c > '9') && !strings.ContainsRune("._+-/~", rune(c)) {
			plain = false
			break
		}
	}
	if plain && (len(w) <= 32 || strings.ContainsAny(w[:1], "/.~")) {
		return w
	}
	if scheme, rest, ok := strings.Cut(w, ":"); ok && scheme != "" && isLetter(scheme[0]) && !strings.ContainsAny(scheme, "/@?#=") {
		slashes := rest[:len(rest)-len(strings.TrimLeft(rest, "/"))]
		return scheme + ":" + slashes + strings.TrimPrefix(redactRaw("x://"+rest[len(slashes):]), "x://")
	}
	r := []rune(w)
	if len(r) > 6 {
		r = r[:6]
	}
	return string(r) + "…"
}

// commandShown is a command as it may be shown: its variables' names
// (NAME=…) and its first word, "…" for what follows.
func commandShown(cmd string) string {
	var shown []string
	f := strings.Fields(cmd)
	for i, w := range f {
		if name, ok := assignment(w); ok {
			shown = append(shown, name+"=…")
			if strings.ContainsAny(w, shellChars) {
				// Where its quoted value ends is sh's to tell.
				return strings.Join(append(shown, "…"), " ")
			}
			continue
		}
		shown = append(shown, w)
		if i < len(f)-1 {
			shown = append(shown, "…")
		}
		break
	}
	return strings.Join(shown, " ")
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
// first word and "…" when it has more (its arguments may hold a token),
// NAME=… for each variable it sets first.
func (t Target) String() string {
	if t.url != nil {
		return redactURL(t.url)
	}
	return commandShown(t.command)
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
// --notify=V, -notify V, -notify=V) shown as Target.String would: for
// repro.json's args.
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		if out[i] == "--" {
			break
		}
		v, n, ok := notifyFlag(out, i)
		switch {
		case !ok:
		case n == 2:
			out[i+1] = redactValue(v)
			i++
		default:
			out[i] = strings.TrimSuffix(out[i], v) + redactValue(v)
		}
	}
	return out
}

// WithoutTargets is args less the --notify flags whose values are
// targets, in their order (as the flags were parsed): for a keeper's
// command line, which any local user may read (/proc/PID/cmdline). A
// --notify among the run's own command's words (after --, or after
// the flags) stays.
func WithoutTargets(args, targets []string) []string {
	var out []string
	i := 0
	for ; i < len(args) && len(targets) > 0 && args[i] != "--"; i++ {
		if v, n, ok := notifyFlag(args, i); ok && v == targets[0] {
			targets = targets[1:]
			i += n - 1
			continue
		}
		out = append(out, args[i])
	}
	return append(out, args[i:]...)
}

// notifyFlag reads args[i] as a --notify flag: its value and how many
// words it takes (2 when the value is the next word). urfave/cli takes
// a flag with one dash or two, its value after = or as the next word.
func notifyFlag(args []string, i int) (value string, n int, ok bool) {
	for _, name := range []string{"--notify", "-notify"} {
		if args[i] == name && i+1 < len(args) {
			return args[i+1], 2, true
		}
		if v, found := strings.CutPrefix(args[i], name+"="); found {
			return v, 1, true
		}
	}
	return "", 0, false
}

func redactValue(v string) string {
	if t, err := ParseTarget(v); err == nil {
		return t.String()
	}
	if strings.Contains(v, "://") {
		return redactRaw(v)
	}
	if f := strings.Fields(v); len(f) == 1 {
		return redactWord(f[0])
	}
	return commandShown(v)
}
