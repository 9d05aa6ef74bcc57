package hosts

import (
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/internal/testfs"
)

// A host's name in output: its name:, else its alias or address as
// written, with the port written with it when that is not the one the
// alias alone gets; and the ssh command a hint gives for it.
func TestHostNamesAndSSHCommands(t *testing.T) {
	const cfg = `
Host lab
  HostName 10.0.0.9
  Port 2201
  User labuser
Host inner
  ProxyJump bastion
`
	e := newLoadEnv(t, cfg)
	other := testfs.WriteFile(t, e.dir, "other_config", cfg)
	for _, c := range []struct {
		name     string
		o        Options
		yaml     string
		names    []string
		commands []string
	}{
		{name: "two sshds on one address", o: Options{Flags: []string{"127.0.0.11:50729,127.0.0.11:50730"}},
			names:    []string{"127.0.0.11:50729", "127.0.0.11:50730"},
			commands: []string{"ssh -p 50729 127.0.0.11", "ssh -p 50730 127.0.0.11"}},
		{name: "port 22 written", o: Options{Flags: []string{"gpu01:22"}}, names: []string{"gpu01"}, commands: []string{"ssh gpu01"}},
		{name: "an alias and its config's port", o: Options{Flags: []string{"lab"}}, names: []string{"lab"}, commands: []string{"ssh lab"}},
		{name: "an alias on another port", o: Options{Flags: []string{"bob@lab:2300"}},
			names: []string{"lab:2300"}, commands: []string{"ssh -p 2300 bob@lab"}},
		{name: "the config's own port written", o: Options{Flags: []string{"lab:2201"}}, names: []string{"lab"}, commands: []string{"ssh lab"}},
		{name: "IPv6", o: Options{Flags: []string{"[fd00::1]:2222", "fd00::2"}},
			names: []string{"[fd00::1]:2222", "fd00::2"}, commands: []string{"ssh -p 2222 fd00::1", "ssh fd00::2"}},
		{name: "another ssh config is named", o: Options{Flags: []string{"lab", "10.0.0.5:2222"}, SSHConfig: other},
			names:    []string{"lab", "10.0.0.5:2222"},
			commands: []string{"ssh -F " + other + " lab", "ssh -F " + other + " -p 2222 10.0.0.5"}},
		{name: "a name: and the defaults' port", yaml: "defaults:\n  port: 2400\n  user: alice\nhosts:\n" +
			"  - address: 10.0.0.5:2401\n    name: big\n  - 10.0.0.6\n  - address: 10.0.0.7\n    port: 2402\n",
			names:    []string{"big", "10.0.0.6", "10.0.0.7:2402"},
			commands: []string{"ssh -p 2401 alice@10.0.0.5", "ssh -p 2400 alice@10.0.0.6", "ssh -p 2402 alice@10.0.0.7"}},
		{name: "a jump the config does not give", yaml: "hosts:\n  - address: gpu01\n    jump: me@bastion:2022\n  - inner\n",
			names:    []string{"gpu01", "inner"},
			commands: []string{"ssh -J me@bastion:2022 gpu01", "ssh inner"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			if c.yaml != "" {
				o.File = testfs.WriteFile(t, t.TempDir(), "hosts.yaml", c.yaml)
			}
			hosts, err := Load(e.opts(o))
			if err != nil {
				t.Fatal(err)
			}
			var names, commands []string
			for _, h := range hosts {
				names, commands = append(names, h.Name), append(commands, h.SSH)
			}
			if strings.Join(names, "|") != strings.Join(c.names, "|") || strings.Join(commands, "|") != strings.Join(c.commands, "|") {
				t.Errorf("names %q, commands %q\nwant  %q, %q", names, commands, c.names, c.commands)
			}
		})
	}

	// One sshd under two spellings is one host; two names alike are refused.
	for _, c := range []struct{ flags, err string }{
		{"lab,lab:2201", "-H lab:2201: duplicate host lab (first at -H lab)"},
		{"lab,10.0.0.9:2201", "-H 10.0.0.9:2201: host 10.0.0.9:2201 is lab again (first at -H lab)"},
		{"10.0.0.5:2222,10.0.0.5:2222", "-H 10.0.0.5:2222: duplicate host 10.0.0.5:2222 (first at -H 10.0.0.5:2222)"},
	} {
		_, err := Load(e.opts(Options{Flags: []string{c.flags}}))
		if err == nil || err.Error() != c.err {
			t.Errorf("-H %s: error %v, want %s", c.flags, err, c.err)
		}
		checkConfigError(t, err)
	}
}
