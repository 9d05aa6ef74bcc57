package emit

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// shellWords renders the plan's strings as bash words for the Slurm
// script: literal text quoted, markers replaced by the node's name as the
// script finds it, and long shared strings (the cluster, host lists) by
// a variable set once per task.
type shellWords struct {
	position map[int]int // marker number → index in tfhive_nodes
	shared   []sharedVar // longest value first
	used     map[string]bool
}

// sharedVar is a string many tasks' values hold, such as the cluster
// spec in every TF_CONFIG: writing it once keeps the script's size
// linear in the number of tasks.
type sharedVar struct{ name, value string }

func newShellWords(position map[int]int) *shellWords {
	return &shellWords{position: position, used: map[string]bool{}}
}

// share makes name stand for value wherever it appears; values without a
// marker are left alone (they are literal and short).
func (w *shellWords) share(name, value string) {
	if !strings.Contains(value, markerPrefix) {
		return
	}
	w.shared = append(w.shared, sharedVar{name, value})
	sort.SliceStable(w.shared, func(i, j int) bool { return len(w.shared[i].value) > len(w.shared[j].value) })
}

// word is s as one bash word.
func (w *shellWords) word(s string) string { return w.render(s, true) }

// nodesOnly renders s with markers resolved but no shared variable, for
// the shared variables' own definitions.
func (w *shellWords) nodesOnly(s string) string { return w.render(s, false) }

func (w *shellWords) render(s string, useShared bool) string {
	if s == "" {
		return "''"
	}
	var b, lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			b.WriteString(quote(lit.String()))
			lit.Reset()
		}
	}
next:
	for i := 0; i < len(s); {
		if useShared {
			for _, v := range w.shared {
				if strings.HasPrefix(s[i:], v.value) {
					flush()
					b.WriteString(`"$` + v.name + `"`)
					w.used[v.name] = true
					i += len(v.value)
					continue next
				}
			}
		}
		if m := paramRE.FindStringSubmatch(s[i:]); m != nil {
			// A sweep's parameter: the array task's value (array.go).
			flush()
			b.WriteString(`"${` + m[1] + `}"`)
			i += len(m[0])
			continue
		}
		if m := markerRE.FindStringSubmatch(s[i:]); m != nil {
			n, _ := strconv.Atoi(m[1])
			flush()
			b.WriteString(`"${tfhive_nodes[` + strconv.Itoa(w.position[n]) + `]}"`)
			i += len(m[0])
			continue
		}
		lit.WriteByte(s[i])
		i++
	}
	flush()
	return b.String()
}

var safeRE = regexp.MustCompile(`^[A-Za-z0-9_@%+=:./-]+$`)

// quote leaves words of safe characters bare and single-quotes the rest
// (commas too: bare in an array they look like a mistake to shellcheck).
func quote(s string) string {
	if safeRE.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellPath quotes a --workdir for the task's shell, keeping a leading ~
// as the home of the user the job runs as, as tfhive run does.
func shellPath(p string) string {
	switch {
	case p == "~":
		return `"$HOME"`
	case strings.HasPrefix(p, "~/"):
		return `"$HOME"/` + quote(p[2:])
	}
	return quote(p)
}
