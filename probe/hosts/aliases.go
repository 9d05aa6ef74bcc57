package hosts

import (
	"path/filepath"
	"strings"

	"github.com/tfhive/tfhive/probe/localfile"
)

// SSHConfigAliases lists the host names the ssh config (Options.SSHConfig,
// else ~/.ssh/config) and the files it includes give a Host line of their
// own, in file order: what a user can type after -H. Patterns (*, ?, !)
// name no host and are left out. It is for shell completion, so it never
// fails: what cannot be read is skipped, with the same caps as Load.
func SSHConfigAliases(o Options) []string {
	name := o.SSHConfig
	if name == "" {
		name = filepath.Join(o.Home, ".ssh", "config")
	}
	var out []string
	seen := map[string]bool{}
	var walk func(name string, system bool, depth int)
	walk = func(name string, system bool, depth int) {
		data, err := localfile.Read(name, maxSSHConfigSize)
		if err != nil || depth > maxIncludeDepth {
			return
		}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '=' })
			if len(f) < 2 {
				continue
			}
			switch {
			case strings.EqualFold(f[0], "Host"):
				for _, a := range f[1:] {
					a = strings.Trim(a, `"`)
					if strings.HasPrefix(a, "#") {
						break
					}
					if a != "" && !strings.ContainsAny(a, "*?!") && !seen[a] {
						seen[a] = true
						out = append(out, a)
					}
				}
			case strings.EqualFold(f[0], "Include"):
				for _, pat := range f[1:] {
					if strings.HasPrefix(pat, "#") {
						break
					}
					matches, _ := filepath.Glob(includePath(pat, system))
					for _, m := range matches {
						walk(m, strings.HasPrefix(filepath.Clean(m), "/etc/ssh"), depth+1)
					}
				}
			}
		}
	}
	walk(name, false, 0)
	return out
}
