package hosts

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/internal/testfs"
)

// The lookup order: -H, --hosts, $TFHIVE_HOSTS, ./hosts.yaml, the
// per-user file, this machine; each origin says which it was.
func TestLoadOriginOrder(t *testing.T) {
	e := newLoadEnv(t, "")
	file := testfs.WriteFile(t, e.dir, "given.yaml", "hosts: [from-file]\n")
	env := testfs.WriteFile(t, e.dir, "env.yaml", "hosts: [from-env]\n")
	def := testfs.WriteFile(t, e.dir, "hosts.yaml", "hosts: [from-default]\n")
	user := testfs.WriteFile(t, e.home, ".config/tfhive/hosts.yaml", "hosts: [from-user]\n")
	missing := filepath.Join(e.dir, "nope.yaml")

	tests := []struct {
		name string
		o    Options
		want string
		kind OriginKind
		desc string
	}{
		{"flags beat all", Options{Flags: []string{"from-flag"}, File: file, EnvFile: env, DefaultFile: def, UserFile: user},
			"from-flag", FromFlags, "-H"},
		{"file beats env", Options{File: file, EnvFile: env, DefaultFile: def, UserFile: user}, "from-file", FromFile, file},
		{"env beats ./hosts.yaml", Options{EnvFile: env, DefaultFile: def, UserFile: user}, "from-env", FromEnv,
			"$TFHIVE_HOSTS (" + env + ")"},
		{"./hosts.yaml beats the user's", Options{DefaultFile: def, UserFile: user}, "from-default", FromDefault, def},
		{"the user's", Options{DefaultFile: missing, UserFile: user}, "from-user", FromUser, "~/.config/tfhive/hosts.yaml"},
		{"none", Options{DefaultFile: missing, UserFile: filepath.Join(e.home, "none.yaml")}, "localhost", FromLocal,
			"this machine, without SSH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hosts, origin, err := LoadOrigin(e.opts(tt.o))
			if err != nil {
				t.Fatal(err)
			}
			if len(hosts) != 1 || hosts[0].Name != tt.want {
				t.Errorf("hosts %+v, want %s", hosts, tt.want)
			}
			if origin.Kind != tt.kind {
				t.Errorf("origin %+v, want kind %d", origin, tt.kind)
			}
			if got := origin.Describe(e.home); got != tt.desc {
				t.Errorf("Describe = %q, want %q", got, tt.desc)
			}
			note := origin.Note(e.home)
			if tt.kind == FromFlags {
				// --hosts lends -H its settings, and says so.
				if note != "hosts from -H, their settings from "+file {
					t.Errorf("Note = %q", note)
				}
			} else if note != "hosts from "+tt.desc && note != "no hosts given: "+tt.desc {
				t.Errorf("Note = %q", note)
			}
			if origin.CommandLine() != (tt.kind == FromFlags || tt.kind == FromFile) {
				t.Errorf("CommandLine = %v", origin.CommandLine())
			}
		})
	}
	if got := (Origin{Kind: FromDefault, File: "hosts.yaml"}).Describe(e.home); got != "./hosts.yaml" {
		t.Errorf("./hosts.yaml described as %q", got)
	}
}

func TestUserFile(t *testing.T) {
	for _, c := range []struct{ home, xdg, want string }{
		{"/home/me", "", "/home/me/.config/tfhive/hosts.yaml"},
		{"/home/me", "/xdg", "/xdg/tfhive/hosts.yaml"},
		{"/home/me", "rel/xdg", "/home/me/.config/tfhive/hosts.yaml"}, // relative: ignored, as XDG says
		{"", "", ""},
		{"", "/xdg", "/xdg/tfhive/hosts.yaml"},
	} {
		if got := UserFile(c.home, c.xdg); got != c.want {
			t.Errorf("UserFile(%q, %q) = %q, want %q", c.home, c.xdg, got, c.want)
		}
	}
}

// A per-user hosts file that cannot be used is refused with the reason,
// never passed over for this machine: a dangling symlink, a FIFO, a
// directory, one over the cap, an unreadable one. A symlink to a file is
// followed (dotfile managers link them).
func TestUserFileFailsClosed(t *testing.T) {
	e := newLoadEnv(t, "")
	dir := filepath.Join(e.home, ".config", "tfhive")
	os.MkdirAll(dir, 0o755)
	name := filepath.Join(dir, "hosts.yaml")
	real := testfs.WriteFile(t, e.dir, "real.yaml", "hosts: [linked]\n")
	big := testfs.SparseFile(t, maxHostsFileSize+1)
	fifo := testfs.FIFO(t)
	for _, c := range []struct {
		name  string
		setup func()
		err   string // "" for no error
	}{
		{"symlink to a file", func() { os.Symlink(real, name) }, ""},
		{"dangling symlink", func() { os.Symlink(filepath.Join(e.dir, "gone.yaml"), name) }, "no such file or directory"},
		{"FIFO", func() { os.Symlink(fifo, name) }, "not a regular file (a FIFO)"},
		{"directory", func() { os.Mkdir(name, 0o755) }, "not a regular file (a directory)"},
		{"too large", func() { os.Symlink(big, name) }, "too large"},
		{"unreadable", func() { os.WriteFile(name, []byte("hosts: [x]\n"), 0o000) }, "permission denied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.RemoveAll(name)
			c.setup()
			if c.name == "unreadable" && os.Getuid() == 0 {
				t.Skip("root reads any file")
			}
			hosts, origin, err := LoadOrigin(e.opts(Options{UserFile: name}))
			if c.err == "" {
				if err != nil || origin.Kind != FromUser || len(hosts) != 1 || hosts[0].Name != "linked" {
					t.Fatalf("hosts %+v, origin %+v, err %v", hosts, origin, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; hosts %+v", hosts)
			}
			want := "hosts file: " + name + ": "
			if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %q, want %q…%q", err, want, c.err)
			}
			checkConfigError(t, err)
		})
	}
}

// `ssh_config:` names the ssh config for the file's hosts: relative to
// the file's directory, ~ the home; --ssh-config wins over it.
func TestHostsFileSSHConfig(t *testing.T) {
	e := newLoadEnv(t, "Host lab\n  HostName 10.9.9.9\n  User homeuser\n")
	confDir := filepath.Join(e.home, ".config", "tfhive")
	testfs.WriteFile(t, confDir, "lab_ssh", "Host lab\n  HostName 10.0.0.1\n  User labuser\n  Port 2201\n")
	testfs.WriteFile(t, e.home, ".ssh/lab", "Host lab\n  HostName 10.0.0.2\n  User tildeuser\n")
	other := testfs.WriteFile(t, e.dir, "flag_ssh", "Host lab\n  HostName 10.0.0.3\n  User flaguser\n")
	for _, c := range []struct {
		name, cfg, flag string
		addr, user      string
	}{
		{"none: ~/.ssh/config", "", "", "10.9.9.9", "homeuser"},
		{"relative to the file", "lab_ssh", "", "10.0.0.1", "labuser"},
		{"dot relative", "./lab_ssh", "", "10.0.0.1", "labuser"},
		{"tilde", "~/.ssh/lab", "", "10.0.0.2", "tildeuser"},
		{"absolute", other, "", "10.0.0.3", "flaguser"},
		{"--ssh-config wins", "lab_ssh", other, "10.0.0.3", "flaguser"},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := "hosts: [lab]\n"
			if c.cfg != "" {
				y = "ssh_config: " + c.cfg + "\n" + y
			}
			user := testfs.WriteFile(t, confDir, "hosts.yaml", y)
			// From another directory: the file means the same anywhere.
			t.Chdir(e.dir)
			hosts, origin, err := LoadOrigin(e.opts(Options{UserFile: user, SSHConfig: c.flag}))
			if err != nil {
				t.Fatal(err)
			}
			h := hosts[0]
			if h.Name != "lab" || h.Address != c.addr || h.User != c.user {
				t.Errorf("host %s at %s as %s, want lab at %s as %s", h.Name, h.Address, h.User, c.addr, c.user)
			}
			if c.cfg != "" && c.flag == "" && origin.SSHConfig == "" {
				t.Errorf("origin names no ssh config: %+v", origin)
			}
		})
	}

	// A named ssh config that cannot be read is an error naming the line.
	user := testfs.WriteFile(t, confDir, "hosts.yaml", "hosts: [lab]\nssh_config: missing\n")
	_, err := Load(e.opts(Options{UserFile: user}))
	want := user + ":2: ssh_config: ssh config: " + filepath.Join(confDir, "missing") + ": no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("error\n got: %v\nwant: %s", err, want)
	}
	checkConfigError(t, err)
	bad := testfs.WriteFile(t, e.dir, "bad.yaml", "ssh_config: [a, b]\nhosts: [lab]\n")
	if _, err := Load(e.opts(Options{File: bad})); err == nil || err.Error() != bad+":1: ssh_config: expected a non-empty value" {
		t.Errorf("list ssh_config: %v", err)
	}
}

// `name:` labels a host; its address is still what is dialled and what
// the ssh config matches.
func TestHostName(t *testing.T) {
	e := newLoadEnv(t, "Host lab-a\n  HostName 10.0.0.1\n  User labuser\n")
	file := testfs.WriteFile(t, e.dir, "hosts.yaml", `hosts:
  - address: lab-a
    name: big
  - address: 10.0.0.2
    name: small
  - gpu03
`)
	hosts, err := Load(e.opts(Options{File: file}))
	if err != nil {
		t.Fatal(err)
	}
	var got [][3]string
	for _, h := range hosts {
		got = append(got, [3]string{h.Name, h.Address, h.User})
	}
	want := [][3]string{{"big", "10.0.0.1", "labuser"}, {"small", "10.0.0.2", "me"}, {"gpu03", "gpu03", "me"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hosts %q, want %q", got, want)
	}

	for _, c := range []struct{ name, yaml, err string }{
		{"bad name", "hosts:\n  - address: a\n    name: \"a b\"\n",
			`FILE:3: name "a b" is not a host name (letters, digits, ., _ and -)`},
		{"name with a port", "hosts:\n  - address: a\n    name: a:22\n",
			`FILE:3: name "a:22" is not a host name (letters, digits, ., _ and -)`},
		{"empty name", "hosts:\n  - address: a\n    name: \"\"\n", `FILE:3: name: expected a non-empty value`},
		{"two names alike", "hosts:\n  - address: a\n    name: x\n  - address: b\n    name: x\n",
			`FILE:4: name x is given twice (first on line 2)`},
		{"a name that is another host's address", "hosts:\n  - gpu01\n  - address: b\n    name: gpu01\n",
			`FILE:3: name gpu01 is another host's too (FILE:2); a name must be unique`},
		{"a name that is another host's on another port", "hosts:\n  - address: b\n    name: gpu01\n  - gpu01:2222\n",
			`FILE:4: name gpu01 is another host's too (FILE:2); a name must be unique`},
		{"one machine under two names", "hosts:\n  - address: a\n    name: x\n  - address: a\n    name: y\n",
			`FILE:4: host y is x again (first at FILE:2)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := testfs.WriteFile(t, e.dir, "bad.yaml", c.yaml)
			_, err := Load(e.opts(Options{File: f}))
			want := strings.ReplaceAll(c.err, "FILE", f)
			if err == nil || err.Error() != want {
				t.Errorf("error\n got: %v\nwant: %s", err, want)
			}
			checkConfigError(t, err)
		})
	}
}

// -H and --hostfile pick hosts; the hosts file that would have given the
// hosts without them lends its entries, `defaults:` and `ssh_config:`,
// as pdsh -w picks among a cluster's configured hosts. Before, -H 'h[1-2]'
// ignored the file and its ssh config: "cannot resolve h1".
func TestFlagsTakeTheHostsFileSettings(t *testing.T) {
	e := newLoadEnv(t, "")
	testfs.WriteFile(t, e.home, ".config/tfhive/lab_ssh_config", "Host h1\n  HostName 10.0.0.1\nHost h3\n  HostName 10.0.0.3\nHost h4\n  HostName 10.0.0.4\nHost *\n  Port 2200\n")
	user := testfs.WriteFile(t, e.home, ".config/tfhive/hosts.yaml", `ssh_config: lab_ssh_config
defaults:
  user: ann
  setup: source ~/venv/bin/activate
hosts:
  - h1
  - address: bob@h2:2222
    name: two
    workdir: /scratch
`)
	o := Options{UserFile: user, DefaultFile: filepath.Join(e.dir, "none.yaml")}
	o.Flags = []string{"h1,two,h3"}
	hs, origin, err := LoadOrigin(e.opts(o))
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 3 {
		t.Fatalf("hosts %+v", hs)
	}
	h1, two, h3 := hs[0], hs[1], hs[2]
	if h1.Address != "10.0.0.1" || h1.Port != 2200 || h1.User != "ann" || h1.Setup != "source ~/venv/bin/activate" {
		t.Errorf("h1: %+v", h1)
	}
	if two.Name != "two" || two.User != "bob" || two.Port != 2222 || two.Workdir != "/scratch" || !strings.Contains(two.Source, user+":7") {
		t.Errorf("two: %+v", two)
	}
	// Not in the file: its defaults and ssh config all the same.
	if h3.Address != "10.0.0.3" || h3.Port != 2200 || h3.User != "ann" || h3.Setup == "" {
		t.Errorf("h3: %+v", h3)
	}
	if origin.CommandLine() || origin.Note(e.home) != "hosts from -H, their settings from ~/.config/tfhive/hosts.yaml" {
		t.Errorf("origin %+v, note %q", origin, origin.Note(e.home))
	}

	hf := testfs.WriteFile(t, e.dir, "hostfile", "two slots=1\nh4\n")
	o.Flags, o.Hostfile = nil, hf
	hs, _, err = LoadOrigin(e.opts(o))
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || hs[0].Name != "two" || hs[0].Port != 2222 || hs[0].Slots != 1 || hs[0].Workdir != "/scratch" ||
		hs[1].Address != "10.0.0.4" || hs[1].User != "ann" {
		t.Errorf("--hostfile: %+v", hs)
	}
}

// A hosts file tfhive finds by itself (./hosts.yaml, the per-user file)
// is read only when nobody else can have written it, and so is the ssh
// config it names; named (--hosts, $TFHIVE_HOSTS, --ssh-config), the
// same files are read as they are.
func TestFoundFilesMustBeOwned(t *testing.T) {
	e := newLoadEnv(t, "")
	open := filepath.Join(e.dir, "scratch")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777|os.ModeSticky) // a lab's /scratch
	cfg := testfs.WriteFile(t, open, "lab_ssh", "Host lab\n  HostName 10.0.0.1\n")
	planted := testfs.WriteFile(t, open, "hosts.yaml", "hosts: [lab]\n")
	confDir := filepath.Join(e.home, ".config", "tfhive")
	user := testfs.WriteFile(t, confDir, "hosts.yaml", "ssh_config: "+cfg+"\nhosts: [lab]\n")
	const hint = "in a directory nobody else can write to; "

	for _, c := range []struct {
		name      string
		o         Options
		err, hint string // "" for read
	}{
		{"./hosts.yaml in a shared directory", Options{DefaultFile: planted},
			"hosts file " + planted + " refused: its directory " + open + " is writable by group and others",
			"a hosts file found by itself must be yours or root's, " + hint + "--hosts " + planted + " reads it anyway, if you trust it (or launch from a directory of your own)"},
		{"the same lending -H its settings", Options{Flags: []string{"lab"}, DefaultFile: planted},
			"hosts file " + planted + " refused: its directory " + open + " is writable by group and others",
			"a hosts file found by itself must be yours or root's, " + hint + "--hosts " + planted + " reads it anyway, if you trust it (or launch from a directory of your own)"},
		{"named with --hosts", Options{File: planted}, "", ""},
		{"named with --hosts, lending -H its settings", Options{Flags: []string{"lab"}, File: planted}, "", ""},
		{"named with $TFHIVE_HOSTS", Options{EnvFile: planted}, "", ""},
		{"the per-user file naming an ssh config in a shared directory", Options{UserFile: user},
			user + ":1: ssh_config " + cfg + " refused: its directory " + open + " is writable by group and others",
			"the ssh config of a hosts file found by itself must be yours or root's, " + hint + "--ssh-config " + cfg + " reads it anyway, if you trust it"},
		{"its ssh config, lending -H its settings", Options{Flags: []string{"lab"}, UserFile: user},
			user + ":1: ssh_config " + cfg + " refused: its directory " + open + " is writable by group and others",
			"the ssh config of a hosts file found by itself must be yours or root's, " + hint + "--ssh-config " + cfg + " reads it anyway, if you trust it"},
		{"that ssh config named with --ssh-config", Options{UserFile: user, SSHConfig: cfg}, "", ""},
		{"the per-user file named with --hosts", Options{File: user}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			hosts, origin, err := LoadOrigin(e.opts(c.o))
			if c.err == "" {
				if err != nil || len(hosts) != 1 {
					t.Fatalf("hosts %+v, err %v", hosts, err)
				}
				return
			}
			if err == nil || err.Error() != c.err {
				t.Fatalf("error\n got: %v\nwant: %s", err, c.err)
			}
			checkConfigError(t, err)
			if h := err.(*ConfigError).Hint(); h != c.hint {
				t.Errorf("hint\n got: %s\nwant: %s", h, c.hint)
			}
			if origin.SSHConfig != "" {
				t.Errorf("a refused ssh config is the origin's: %+v", origin)
			}
		})
	}

	// The per-user file writable by its group: refused as well.
	os.Chmod(user, 0o664)
	_, err := Load(e.opts(Options{UserFile: user}))
	if want := "hosts file ~/.config/tfhive/hosts.yaml refused: it is writable by its group"; err == nil || err.Error() != want {
		t.Errorf("error\n got: %v\nwant: %s", err, want)
	}
}
