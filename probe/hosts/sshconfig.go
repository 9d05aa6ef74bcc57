package hosts

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/kevinburke/ssh_config"

	"github.com/tfhive/tfhive/probe/localfile"
)

// loadSSHConfig reads o.SSHConfig, else ~/.ssh/config when it exists.
// owned: the file must be one nobody else can have written
// (localfile.ReadOwned), whose *localfile.NotOwnedError is returned as
// it is.
func loadSSHConfig(o Options, owned bool) (*ssh_config.Config, error) {
	name := o.SSHConfig
	explicit := name != ""
	if !explicit {
		name = filepath.Join(o.Home, ".ssh", "config")
	}
	read := localfile.Read
	if owned {
		read = localfile.ReadOwned
	}
	data, err := read(name, maxSSHConfigSize)
	if err != nil {
		var no *localfile.NotOwnedError
		switch {
		case errors.As(err, &no):
			return nil, err
		case !explicit && errors.Is(err, fs.ErrNotExist):
			return &ssh_config.Config{}, nil
		}
		return nil, configErrorf("ssh config: %v", localfile.Describe(err))
	}
	if err := checkIncludes(name, data, false, 0); err != nil {
		return nil, err
	}
	cfg, err := ssh_config.DecodeBytes(data)
	if err != nil {
		return nil, configErrorf("ssh config %s: %v", name, err)
	}
	return cfg, nil
}

// maxIncludeDepth is ssh_config's own limit; past it the parser says so.
const maxIncludeDepth = 5

// checkIncludes applies localfile.Read's limits to the files the ssh config
// includes, before ssh_config reads them itself with no limit (an Include
// matching a FIFO would hang it). Paths are resolved as ssh_config does.
func checkIncludes(name string, data []byte, system bool, depth int) error {
	if depth > maxIncludeDepth {
		return nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '=' })
		if len(f) < 2 || !strings.EqualFold(f[0], "Include") {
			continue
		}
		for _, pat := range f[1:] {
			if strings.HasPrefix(pat, "#") {
				break
			}
			matches, _ := filepath.Glob(includePath(pat, system))
			for _, m := range matches {
				inc, err := localfile.Read(m, maxSSHConfigSize)
				if err != nil {
					return configErrorf("ssh config %s: Include %s: %v", name, pat, localfile.Describe(err))
				}
				sys := strings.HasPrefix(filepath.Clean(m), "/etc/ssh")
				if err := checkIncludes(m, inc, sys, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// includePath resolves an Include argument like ssh_config.NewInclude (in a
// file under /etc/ssh, system is true). The library looks at the account's
// home directory, not Options.Home.
func includePath(pat string, system bool) string {
	home := os.Getenv("HOME")
	if u, err := user.Current(); err == nil {
		home = u.HomeDir
	}
	switch {
	case filepath.IsAbs(pat):
		return pat
	case system:
		return filepath.Join("/etc/ssh", pat)
	case strings.HasPrefix(pat, "~/"):
		return filepath.Join(home, pat[2:])
	}
	return filepath.Join(home, ".ssh", pat)
}
