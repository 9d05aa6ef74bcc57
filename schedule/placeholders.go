package schedule

import (
	"fmt"
	"slices"
	"strings"
)

// placeholders are the {names} substituted into the command, per task, in
// the order help text lists them.
var placeholders = []string{
	"job_name",     // ps, chief, worker or evaluator (tf)
	"task_index",   // the task's index within its role
	"ps_hosts",     // comma-joined addr:port of the ps tasks (tf)
	"worker_hosts", // comma-joined addr:port of the workers (tf)
	"chief_hosts",  // the chief's addr:port, or "" (tf)
	"cluster_spec", // the training cluster as JSON, as in TF_CONFIG (tf)
	"tf_config",    // the task's TF_CONFIG (tf)
	"run_id",       // the run id
	"host",         // the host's name in output (hosts.displayName: its name:, else as written, :port included)
	"port",         // the task's port (tf)
	"gpus",         // comma-joined GPU indices, "" for a CPU task
	"rank",         // RANK (torch)
	"world_size",   // WORLD_SIZE (torch)
	"master_addr",  // MASTER_ADDR (torch)
	"master_port",  // MASTER_PORT (torch)
	"code_dir",     // the --sync tree's directory on the task's host
}

// frameworkOnly says which placeholders only one framework has a value
// for; the others mean the same in both. Each refused name comes with what
// to write instead.
var frameworkOnly = map[string]struct{ framework, instead string }{
	"job_name":     {FrameworkTF, "torch tasks have ranks, not jobs: use {rank}"},
	"ps_hosts":     {FrameworkTF, "a torch world has no TensorFlow cluster: ranks meet at {master_addr}:{master_port}"},
	"worker_hosts": {FrameworkTF, "a torch world has no TensorFlow cluster: ranks meet at {master_addr}:{master_port}"},
	"chief_hosts":  {FrameworkTF, "a torch world has no TensorFlow cluster: ranks meet at {master_addr}:{master_port}"},
	"cluster_spec": {FrameworkTF, "a torch world has no TensorFlow cluster: ranks meet at {master_addr}:{master_port}"},
	"tf_config":    {FrameworkTF, "torch tasks get no TF_CONFIG: use {rank} {world_size} {master_addr} {master_port}"},
	"port":         {FrameworkTF, "torch tasks have no port of their own: {master_port} is where rank 0 serves the rendezvous"},
	"rank":         {FrameworkTorch, "add --framework torch, or use {job_name} and {task_index} for TensorFlow"},
	"world_size":   {FrameworkTorch, "add --framework torch, or use {worker_hosts} for TensorFlow"},
	"master_addr":  {FrameworkTorch, "add --framework torch, or use {chief_hosts} or {worker_hosts} for TensorFlow"},
	"master_port":  {FrameworkTorch, "add --framework torch, or use {port} for TensorFlow"},
}

// expand substitutes placeholders in one argument. The grammar:
//
//   - {name}, name matching [a-z_]+, is a placeholder; an unknown name is an
//     error, because a typo would otherwise reach the script verbatim.
//   - ${ is copied as is, so shell ${HOME} and ${job_name} are left to the shell.
//   - {{ is a literal {; a }} is a literal } when it closes a {{, so
//     {{job_name}} gives {job_name}. Any other } is copied as is: nested JSON
//     such as {"a":{"b":1}} ends in }} and must survive untouched.
//   - Any other brace (JSON, awk '{print $1}', a{b,c}) is copied as is.
//
// value returns a placeholder's text; nil value only checks the syntax.
func expand(arg string, value func(name string) string) (string, error) {
	var b strings.Builder
	escaped := false // inside {{ … }}
	for i := 0; i < len(arg); {
		rest := arg[i:]
		switch {
		case strings.HasPrefix(rest, "${"):
			b.WriteString("${")
			i += 2
		case strings.HasPrefix(rest, "{{"):
			b.WriteByte('{')
			escaped = true
			i += 2
		case escaped && strings.HasPrefix(rest, "}}"):
			b.WriteByte('}')
			escaped = false
			i += 2
		case rest[0] == '{':
			n := 1
			for n < len(rest) && (rest[n] >= 'a' && rest[n] <= 'z' || rest[n] == '_') {
				n++
			}
			if n == 1 || n == len(rest) || rest[n] != '}' {
				// Not a placeholder: a brace of the command's own (JSON,
				// a Python dict, {a,b}) stays as it is; but a known name
				// whose brace is not closed is a typo, not a literal.
				if name := rest[1:n]; n > 1 && slices.Contains(placeholders, name) && (n == len(rest) || !isWordByte(rest[n])) {
					return "", usageErr(fmt.Sprintf("write {%s}, or {{%s for a literal {%s", name, name, name),
						"placeholder {%s is not closed in %q", name, arg)
				}
				b.WriteByte('{')
				i++
				continue
			}
			name := rest[1:n]
			if !slices.Contains(placeholders, name) {
				return "", unknownPlaceholder(name)
			}
			if value != nil {
				b.WriteString(value(name))
			}
			i += n + 1
		default:
			b.WriteByte(rest[0])
			i++
		}
	}
	return b.String(), nil
}

// checkCommand finds unknown placeholders, those the framework has no
// value for, and {code_dir} without a --sync tree (hasCode), before any
// host is touched.
// isWordByte: c goes on a word (a name longer than a placeholder's).
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func checkCommand(argv []string, framework string, hasCode bool) error {
	for _, a := range argv {
		var wrong string
		noCode := false
		_, err := expand(a, func(name string) string {
			if only, ok := frameworkOnly[name]; ok && only.framework != framework && wrong == "" {
				wrong = name
			}
			noCode = noCode || name == "code_dir" && !hasCode
			return ""
		})
		if err != nil {
			return err
		}
		if wrong != "" {
			return usageErr(frameworkOnly[wrong].instead, "placeholder {%s} cannot be used with --framework %s", wrong, framework)
		}
		if noCode {
			return usageErr("add --sync DIR to send DIR to every host; {code_dir} is where it is there", "placeholder {code_dir} needs --sync")
		}
	}
	return nil
}

func unknownPlaceholder(name string) error {
	known := make([]string, len(placeholders))
	for i, p := range placeholders {
		known[i] = "{" + p + "}"
	}
	hint := "known placeholders: " + strings.Join(known, " ") + "; write {{" + name + "}} for a literal {" + name + "}"
	if s := closest(name); s != "" {
		hint = fmt.Sprintf("did you mean {%s}? ", s) + hint
	}
	return usageErr(hint, "unknown placeholder {%s} in command", name)
}

// closest returns the placeholder within two edits of name, if exactly one
// is nearest; a suggestion that is a coin toss would mislead.
func closest(name string) string {
	best, bestD, ties := "", 3, 0
	for _, p := range placeholders {
		switch d := editDistance(name, p); {
		case d < bestD:
			best, bestD, ties = p, d, 0
		case d == bestD:
			ties++
		}
	}
	if ties > 0 {
		return ""
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// PlaceholderNames lists the command placeholders without braces, for help
// text.
func PlaceholderNames() []string { return slices.Clone(placeholders) }
