// Package shscript prepares the shell scripts tfhive sends to hosts. Each
// script is a .sh file embedded next to the Go code that sends it, so that
// shellcheck reads what the hosts run. Its parameters are shell variables
// assigned ahead of its text, every value quoted: no value is ever pasted
// into a script, and no script is assembled from pieces. It imports only
// the standard library and shellescape; tfhive's packages import it, never
// the other way round.
package shscript

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/alessio/shellescape"
)

// Script is an embedded script as it is sent: without its comment lines
// and blank lines, which explain it here and need not travel.
type Script struct {
	src, text string
	oneLine   bool
}

// Load reads the named files of fsys, in order, as one script. The files
// are embedded: one missing is a build mistake, hence the panic.
func Load(fsys fs.FS, names ...string) Script {
	var src strings.Builder
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			panic(fmt.Sprintf("shscript: %v", err))
		}
		src.Write(b)
	}
	s := Script{src: src.String()}
	var lines []string
	for line := range strings.Lines(s.src) {
		if code := strings.TrimSpace(line); code != "" && !strings.HasPrefix(code, "#") {
			lines = append(lines, strings.TrimSuffix(line, "\n"))
		}
	}
	s.text = strings.Join(lines, "\n") + "\n"
	return s
}

// LoadOneLine is Load for a script that travels on a command line, which a
// csh login shell passes on only without newlines: its lines are joined
// with a space, their indentation dropped. So every line of such a file
// ends where a newline could be a space: after `;`, `;;`, `then`, `do`,
// `else`, `in`, a case pattern's `)`, `{`, `|`, `&&` or `||`, and holds no
// comment after code (the tests compare its meaning with the file's).
func LoadOneLine(fsys fs.FS, names ...string) Script {
	s := Load(fsys, names...)
	s.text = OneLine(s.text)
	s.oneLine = true
	return s
}

// OneLine joins a script's lines with a space, dropping their indentation,
// blank lines and comment lines.
func OneLine(script string) string {
	var lines []string
	for line := range strings.Lines(script) {
		if code := strings.TrimSpace(line); code != "" && !strings.HasPrefix(code, "#") {
			lines = append(lines, code)
		}
	}
	return strings.Join(lines, " ")
}

// Text is the script as sent, without parameters.
func (s Script) Text() string { return s.text }

// Source is the files' text as written, comments included (for tests
// that check that Text means the same).
func (s Script) Source() string { return s.src }

// Var is a parameter of a script: a shell variable assigned ahead of its
// text.
type Var struct {
	name, value string
	export      bool
}

// Set is a parameter the script reads.
func Set(name, value string) Var { return Var{name: name, value: value} }

// Export is a parameter the script's children inherit: a task's
// environment.
func Export(name, value string) Var { return Var{name: name, value: value, export: true} }

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// With is the script preceded by its parameters, each value quoted:
// `name=value` a line each, or `name=value; ` on the script's one line.
// Names are tfhive's own or checked variable names (--env, the hosts
// file): any other is a bug, hence the panic, as for a newline in a
// one-line script's value.
func (s Script) With(vars ...Var) string {
	var b strings.Builder
	for _, v := range vars {
		if !nameRE.MatchString(v.name) {
			panic(fmt.Sprintf("shscript: %q is not a shell variable name", v.name))
		}
		if s.oneLine && strings.Contains(v.value, "\n") {
			panic(fmt.Sprintf("shscript: %s's value holds a newline, and the script travels on one line", v.name))
		}
		if v.export {
			b.WriteString("export ")
		}
		b.WriteString(v.name + "=" + shellescape.Quote(v.value))
		if s.oneLine {
			b.WriteString("; ")
		} else {
			b.WriteString("\n")
		}
	}
	b.WriteString(s.text)
	return b.String()
}
