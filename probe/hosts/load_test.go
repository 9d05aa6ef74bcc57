package hosts

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/internal/testfs"
	"github.com/tfhive/tfhive/probe/inventory"
)

// loadEnv is a temp HOME (with an optional ~/.ssh/config) and a working
// directory for hosts files.
type loadEnv struct {
	home, dir string
}

func newLoadEnv(t *testing.T, sshConfig string) loadEnv {
	t.Helper()
	e := loadEnv{home: t.TempDir(), dir: t.TempDir()}
	t.Setenv("HOME", e.home) // ssh_config's Include looks at $HOME
	if sshConfig != "" {
		testfs.WriteFile(t, e.home, ".ssh/config", sshConfig)
	}
	return e
}

func (e loadEnv) opts(o Options) Options {
	o.Home = e.home
	if o.LocalUser == "" {
		o.LocalUser = "me"
	}
	return o
}

func (e loadEnv) defaultKeys() []string {
	return []string{
		filepath.Join(e.home, ".ssh/id_ed25519"),
		filepath.Join(e.home, ".ssh/id_ecdsa"),
		filepath.Join(e.home, ".ssh/id_rsa"),
	}
}

func (e loadEnv) defaultKnownHosts() []string {
	return []string{filepath.Join(e.home, ".ssh/known_hosts"), "/etc/ssh/ssh_known_hosts"}
}

func TestLoadHostsSourcePrecedence(t *testing.T) {
	e := newLoadEnv(t, "")
	file := testfs.WriteFile(t, e.dir, "given.yaml", "hosts: [from-file]\n")
	def := testfs.WriteFile(t, e.dir, "hosts.yaml", "hosts: [from-default]\n")
	missing := filepath.Join(e.dir, "nope.yaml")

	tests := []struct {
		name string
		o    Options
		want []string // names; "LOCAL" for the local default
	}{
		{"flags beat file", Options{Flags: []string{"from-flag"}, File: file, DefaultFile: def}, []string{"from-flag"}},
		{"file beats default file", Options{File: file, DefaultFile: def}, []string{"from-file"}},
		{"default file", Options{DefaultFile: def}, []string{"from-default"}},
		{"default file absent", Options{DefaultFile: missing}, []string{"LOCAL"}},
		{"nothing", Options{}, []string{"LOCAL"}},
		{"several flags and lists", Options{Flags: []string{"a,b", "c"}}, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hosts, err := Load(e.opts(tt.o))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, h := range hosts {
				if h.Local {
					names = append(names, "LOCAL")
					if !reflect.DeepEqual(h, Local()) {
						t.Errorf("local host = %+v, want %+v", h, Local())
					}
					continue
				}
				names = append(names, h.Name)
			}
			if !reflect.DeepEqual(names, tt.want) {
				t.Errorf("hosts %q, want %q", names, tt.want)
			}
		})
	}
}

func TestLocalHostDefault(t *testing.T) {
	e := newLoadEnv(t, "Host *\n  User nobody-here\n")
	hosts, err := Load(e.opts(Options{DefaultFile: filepath.Join(e.dir, "hosts.yaml")}))
	if err != nil {
		t.Fatal(err)
	}
	want := []inventory.Host{{Name: "localhost", Address: "localhost", ClusterAddress: "localhost", Local: true, Source: "default"}}
	if !reflect.DeepEqual(hosts, want) {
		t.Errorf("got %+v\nwant %+v", hosts, want)
	}
}

func TestLoadHostsSSHConfig(t *testing.T) {
	const cfg = `
Host gpu01
  HostName 10.1.2.3
  User cfguser
  Port 2201
  IdentityFile ~/.ssh/lab_%h_%r_%%
  IdentityFile %d/keys/second
  UserKnownHostsFile ~/.ssh/kh_%n %d/other_kh
  HostKeyAlias gpu01-key

Host gpu02
  HostName %h.lab.example

Host gpu04
  ProxyCommand none
  HostName 192.0.2.4

Host *
  User everyone
`
	e := newLoadEnv(t, cfg)
	h := e.home
	tests := []struct {
		name string
		o    Options
		yaml string // hosts file content, used when set
		want inventory.Host
	}{
		{
			name: "everything from ssh_config",
			o:    Options{Flags: []string{"gpu01"}},
			want: inventory.Host{Name: "gpu01", Address: "10.1.2.3", Port: 2201, User: "cfguser",
				IdentityFiles:   []string{h + "/.ssh/lab_10.1.2.3_cfguser_%", h + "/keys/second"},
				KnownHostsFiles: []string{h + "/.ssh/kh_gpu01", h + "/other_kh", "/etc/ssh/ssh_known_hosts"},
				HostKeyAlias:    "gpu01-key", ClusterAddress: "10.1.2.3", SSH: "ssh gpu01", Source: "-H gpu01"},
		},
		{
			name: "flag user and port beat ssh_config",
			o:    Options{Flags: []string{"bob@gpu01:2222"}},
			want: inventory.Host{Name: "gpu01:2222", Address: "10.1.2.3", Port: 2222, User: "bob",
				IdentityFiles:   []string{h + "/.ssh/lab_10.1.2.3_bob_%", h + "/keys/second"},
				KnownHostsFiles: []string{h + "/.ssh/kh_gpu01", h + "/other_kh", "/etc/ssh/ssh_known_hosts"},
				HostKeyAlias:    "gpu01-key", ClusterAddress: "10.1.2.3", SSH: "ssh -p 2222 bob@gpu01", Source: "-H bob@gpu01:2222"},
		},
		{
			name: "%h in HostName, Host * user, built-in defaults",
			o:    Options{Flags: []string{"gpu02"}},
			want: inventory.Host{Name: "gpu02", Address: "gpu02.lab.example", Port: 22, User: "everyone",
				IdentityFiles: e.defaultKeys(), KnownHostsFiles: e.defaultKnownHosts(),
				ClusterAddress: "gpu02.lab.example", SSH: "ssh gpu02", Source: "-H gpu02"},
		},
		{
			name: "ProxyCommand none is fine",
			o:    Options{Flags: []string{"gpu04"}},
			want: inventory.Host{Name: "gpu04", Address: "192.0.2.4", Port: 22, User: "everyone",
				IdentityFiles: e.defaultKeys(), KnownHostsFiles: e.defaultKnownHosts(),
				ClusterAddress: "192.0.2.4", SSH: "ssh gpu04", Source: "-H gpu04"},
		},
		{
			name: "IPv6 flag",
			o:    Options{Flags: []string{"[::1]:2222"}},
			want: inventory.Host{Name: "[::1]:2222", Address: "::1", Port: 2222, User: "everyone",
				IdentityFiles: e.defaultKeys(), KnownHostsFiles: e.defaultKnownHosts(),
				ClusterAddress: "::1", SSH: "ssh -p 2222 ::1", Source: "-H [::1]:2222"},
		},
		{
			name: "yaml user, port, identity and cluster_address beat ssh_config",
			yaml: "hosts:\n  - address: gpu01\n    user: yuser\n    port: 2300\n    identity_file: ~/k\n    cluster_address: 10.9.9.9\n    gpus: [1]\n",
			want: inventory.Host{Name: "gpu01:2300", Address: "10.1.2.3", Port: 2300, User: "yuser",
				IdentityFiles:   []string{h + "/k"},
				KnownHostsFiles: []string{h + "/.ssh/kh_gpu01", h + "/other_kh", "/etc/ssh/ssh_known_hosts"},
				HostKeyAlias:    "gpu01-key", ClusterAddress: "10.9.9.9", ClusterAddressSet: true, GPUs: []int{1},
				SSH: "ssh -p 2300 yuser@gpu01", Source: "HOSTS:2"},
		},
		{
			name: "yaml defaults beat ssh_config too; ~ alone",
			yaml: "defaults:\n  user: duser\n  port: 2400\n  identity_file: \"~\"\nhosts:\n  - gpu02\n",
			want: inventory.Host{Name: "gpu02", Address: "gpu02.lab.example", Port: 2400, User: "duser",
				IdentityFiles: []string{h}, KnownHostsFiles: e.defaultKnownHosts(),
				ClusterAddress: "gpu02.lab.example", SSH: "ssh -p 2400 duser@gpu02", Source: "HOSTS:6"},
		},
		{
			name: "address user beats defaults user",
			yaml: "defaults:\n  user: duser\nhosts:\n  - address: bob@gpu03\n    user: bob\n",
			want: inventory.Host{Name: "gpu03", Address: "gpu03", Port: 22, User: "bob",
				IdentityFiles: e.defaultKeys(), KnownHostsFiles: e.defaultKnownHosts(),
				ClusterAddress: "gpu03", SSH: "ssh bob@gpu03", Source: "HOSTS:4"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			want := tt.want
			if tt.yaml != "" {
				o.File = testfs.WriteFile(t, t.TempDir(), "hosts.yaml", tt.yaml)
				want.Source = strings.Replace(want.Source, "HOSTS", o.File, 1)
			}
			hosts, err := Load(e.opts(o))
			if err != nil {
				t.Fatal(err)
			}
			if len(hosts) != 1 {
				t.Fatalf("got %d hosts, want 1", len(hosts))
			}
			if !reflect.DeepEqual(hosts[0], want) {
				t.Errorf("got  %+v\nwant %+v", hosts[0], want)
			}
		})
	}
}

func TestLoadHostsExplicitSSHConfig(t *testing.T) {
	e := newLoadEnv(t, "Host gpu01\n  User from-home\n")
	other := testfs.WriteFile(t, e.dir, "ssh_config", "Host gpu01\n  User from-explicit\n")
	hosts, err := Load(e.opts(Options{Flags: []string{"gpu01"}, SSHConfig: other}))
	if err != nil {
		t.Fatal(err)
	}
	if hosts[0].User != "from-explicit" {
		t.Errorf("User = %q, want from-explicit (the explicit ssh config replaces ~/.ssh/config)", hosts[0].User)
	}
	hosts, err = Load(e.opts(Options{Flags: []string{"gpu01"}}))
	if err != nil {
		t.Fatal(err)
	}
	if hosts[0].User != "from-home" {
		t.Errorf("User = %q, want from-home (~/.ssh/config under Home)", hosts[0].User)
	}
}

type hop struct {
	Name, Address, User string
	Port                int
}

func hops(hs []inventory.Host) []hop {
	var out []hop
	for _, h := range hs {
		out = append(out, hop{h.Name, h.Address, h.User, h.Port})
	}
	return out
}

func TestLoadHostsProxyJump(t *testing.T) {
	const cfg = `
Host target
  ProxyJump j1,bob@j2:2222
Host j1
  HostName 10.0.0.1
  User ju
  ProxyJump j0
Host j0
  Port 2200
Host bastion
  ProxyJump none
Host inner-*
  ProxyJump bastion
`
	e := newLoadEnv(t, cfg)
	tests := []struct {
		name     string
		flag     string
		yaml     string
		wantJump string
		wantVia  []hop
	}{
		{name: "chain with nested ProxyJump, in dial order", flag: "target", wantJump: "j1,bob@j2:2222",
			wantVia: []hop{{"j0", "j0", "me", 2200}, {"j1", "10.0.0.1", "ju", 22}, {"j2:2222", "j2", "bob", 2222}}},
		{name: "pattern match, jump host's ProxyJump none", flag: "inner-3", wantJump: "bastion",
			wantVia: []hop{{"bastion", "bastion", "me", 22}}},
		{name: "no jump", flag: "j0", wantJump: "", wantVia: nil},
		{name: "yaml jump beats ssh_config ProxyJump", yaml: "hosts:\n  - address: target\n    jump: carol@j9:2022\n",
			wantJump: "carol@j9:2022", wantVia: []hop{{"j9:2022", "j9", "carol", 2022}}},
		{name: "yaml default jump, hop resolved through ssh_config", yaml: "defaults:\n  jump: j1\nhosts: [x]\n",
			wantJump: "j1", wantVia: []hop{{"j0", "j0", "me", 2200}, {"j1", "10.0.0.1", "ju", 22}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{}
			if tt.flag != "" {
				o.Flags = []string{tt.flag}
			} else {
				o.File = testfs.WriteFile(t, t.TempDir(), "hosts.yaml", tt.yaml)
			}
			hosts, err := Load(e.opts(o))
			if err != nil {
				t.Fatal(err)
			}
			h := hosts[0]
			if h.Jump != tt.wantJump {
				t.Errorf("Jump = %q, want %q", h.Jump, tt.wantJump)
			}
			if got := hops(h.Via); !reflect.DeepEqual(got, tt.wantVia) {
				t.Errorf("Via = %+v\nwant  %+v", got, tt.wantVia)
			}
			for _, v := range h.Via {
				if v.Via != nil {
					t.Errorf("hop %s has its own Via %v: chains must be flattened", v.Name, hops(v.Via))
				}
			}
		})
	}
}

func TestLoadHostsProxyJumpLoop(t *testing.T) {
	for _, cfg := range []string{
		"Host a\n  ProxyJump b\nHost b\n  ProxyJump a\n",
		"Host a\n  ProxyJump a\n",
		"Host *\n  ProxyJump bastion\n", // bastion jumps through itself
	} {
		t.Run(strings.ReplaceAll(cfg, "\n", " "), func(t *testing.T) {
			e := newLoadEnv(t, cfg)
			done := make(chan error, 1)
			go func() {
				_, err := Load(e.opts(Options{Flags: []string{"a"}}))
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Load hangs on a ProxyJump loop")
			}
			if err == nil {
				t.Fatal("no error for a ProxyJump loop")
			}
			checkConfigError(t, err)
			if !strings.HasPrefix(err.Error(), "-H a (jump ") ||
				!strings.HasSuffix(err.Error(), ": ProxyJump chain longer than 8 hops (a loop in the ssh config?)") {
				t.Errorf("error = %q", err)
			}
		})
	}
}

func TestLoadHostsErrors(t *testing.T) {
	cfg := `
Host pc
  ProxyCommand ssh -W %h:%p bastion
Host badname
  HostName evil;rm
Host badport
  Port ssh
Host jbad
  ProxyJump x;y
Host jpc
  ProxyJump pc
Host longhn
  HostName ` + strings.Repeat("h", 254) + `
`
	a254, a40 := strings.Repeat("a", 254), strings.Repeat("a", shownMax)
	tests := []struct {
		name  string
		flags []string
		yaml  string // "" : use flags
		o     Options
		err   string // exact; FILE is replaced by the hosts file's path
		hint  string
	}{
		{name: "ProxyCommand refused", flags: []string{"pc"},
			err:  "-H pc: ProxyCommand in the ssh config is not supported",
			hint: "use ProxyJump (or `jump:` in the hosts file) instead"},
		{name: "ProxyCommand on a jump host", flags: []string{"jpc"},
			err: "-H jpc (jump pc): ProxyCommand in the ssh config is not supported"},
		{name: "bad HostName", flags: []string{"badname"},
			err: `-H badname: ssh config HostName "evil;rm" is not a host name or IP address`},
		{name: "bad ssh_config Port", flags: []string{"badport"},
			err: `-H badport: ssh config Port: bad port "ssh" (want 1-65535)`},
		{name: "bad ProxyJump hop", flags: []string{"jbad"},
			err: `-H jbad (jump x;y): host "x;y": "x;y" is not a host name or IP address`},
		{name: "bad yaml jump hop", yaml: "hosts:\n  - address: gpu01\n    jump: \"ok, $(x)\"\n",
			err: `FILE:2 (jump $(x)): host "$(x)": "$(x)" is not a host name or IP address`},
		{name: "bad -H", flags: []string{"good", "a;b"},
			err: `-H a;b: host "a;b": "a;b" is not a host name or IP address`},
		{name: "-H with a newline", flags: []string{"h1\nh2"},
			err: `-H "h1\nh2": host "h1\nh2": "h1\nh2" is not a host name or IP address`},
		{name: "-H with an escape", flags: []string{"gpu\x1b[31m"},
			err: `-H "gpu\x1b[31m": bad host range: [ without ]`},
		{name: "-H with a bidi override", flags: []string{"gpu\u202e10"},
			err: `-H "gpu\u202e10": host "gpu\u202e10": "gpu\u202e10" is not a host name or IP address`},
		{name: "-H too long", flags: []string{a254},
			err: `-H "` + a40 + `…": host "` + a40 + `…" (254 characters): longer than a host name's 253`},
		{name: "-H of 100 KB", flags: []string{"u@" + strings.Repeat("a", 100_000) + ":22"},
			err: `-H "u@` + a40[2:] + `…": host "` + a40 + `…" (100000 characters): longer than a host name's 253`},
		{name: "user too long", flags: []string{strings.Repeat("u", 257) + "@h"},
			err: `-H "` + strings.Repeat("u", shownMax) + `…": host "` + strings.Repeat("u", shownMax) + `…": user name of 257 characters: longer than 256`},
		{name: "range of names too long", flags: []string{"h[1-2]" + a254},
			err: `-H "h1` + a40[2:] + `…": host "h1` + a40[2:] + `…" (256 characters): longer than a host name's 253`},
		{name: "HostName too long", flags: []string{"longhn"},
			err: `-H longhn: ssh config HostName "` + strings.Repeat("h", shownMax) + `…" (254 characters): longer than a host name's 253`},
		{name: "address too long in file", yaml: "hosts:\n  - " + a254 + "\n",
			err: `FILE:2: host "` + a40 + `…" (254 characters): longer than a host name's 253`},
		{name: "name too long in file", yaml: "hosts:\n  - address: gpu01\n    name: " + a254 + "\n",
			err: `FILE:3: name "` + a40 + `…" (254 characters): longer than a host name's 253`},
		{name: "cluster_address too long in file", yaml: "hosts:\n  - address: gpu01\n    cluster_address: " + a254 + "\n",
			err: `FILE:3: cluster_address "` + a40 + `…" (254 characters): longer than a host name's 253`},
		{name: "name with a bidi override in file", yaml: "hosts:\n  - address: gpu01\n    name: \"a\\u202eb\"\n",
			err: `FILE:3: name "a\u202eb" is not a host name (letters, digits, ., _ and -)`},
		{name: "empty -H", flags: []string{" , "},
			err: `-H: no host given`},
		{name: "user given twice", yaml: "hosts:\n  - gpu00\n  - address: bob@gpu01\n    user: alice\n",
			err: `FILE:3: user given twice (bob in address, alice in user:)`},
		{name: "port given twice", yaml: "hosts:\n  - address: gpu01:2222\n    port: 22\n",
			err: `FILE:2: port given twice (2222 in address, 22 in port:)`},
		{name: "bad address in file", yaml: "hosts:\n  - gpu01\n  - \"gpu 02\"\n",
			err: `FILE:3: host "gpu 02": "gpu 02" is not a host name or IP address`},
		{name: "duplicate in file", yaml: "hosts:\n  - gpu01\n  - gpu02:2222\n  - address: alice@gpu01\n    port: 22\n",
			err: `FILE:4: duplicate host gpu01 (first at FILE:2)`},
		{name: "duplicate with port", yaml: "hosts:\n  - gpu01:2222\n  - gpu01\n  - address: gpu01\n    port: 2222\n",
			err: `FILE:4: duplicate host gpu01:2222 (first at FILE:2)`},
		{name: "duplicate flags", flags: []string{"gpu01,gpu02", "gpu01:22"},
			err: `-H gpu01:22: duplicate host gpu01 (first at -H gpu01)`},
		{name: "no user anywhere", flags: []string{"gpu01"}, o: Options{LocalUser: "-"},
			err: `-H gpu01: no user name (set user: or User in the ssh config)`},
		{name: "hosts file error passes through", yaml: "hosts:\n  - address: gpu01\n    bogus: 1\n",
			err: `FILE:3: unknown key "bogus" (known: ` + knownEntryKeys + `)`},
		{name: "missing hosts file", o: Options{File: "/nonexistent/hosts.yaml"},
			err: `hosts file: /nonexistent/hosts.yaml: no such file or directory`},
		{name: "missing explicit ssh config", flags: []string{"gpu01"}, o: Options{SSHConfig: "/nonexistent/ssh_config"},
			err: `ssh config: /nonexistent/ssh_config: no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newLoadEnv(t, cfg)
			o := tt.o
			if o.LocalUser == "-" {
				o.LocalUser = ""
				o.Home = e.home
			} else {
				o = e.opts(o)
			}
			o.Flags = tt.flags
			want := tt.err
			if tt.yaml != "" {
				o.File = testfs.WriteFile(t, e.dir, "hosts.yaml", tt.yaml)
				want = strings.ReplaceAll(want, "FILE", o.File)
			}
			hosts, err := Load(o)
			if err == nil {
				t.Fatalf("no error; hosts %+v\nwant: %s", hosts, want)
			}
			if err.Error() != want {
				t.Errorf("error\n got: %s\nwant: %s", err, want)
			}
			checkConfigError(t, err)
			if tt.hint != "" {
				var ce *ConfigError
				if errors.As(err, &ce); ce.Hint() != tt.hint {
					t.Errorf("hint = %q, want %q", ce.Hint(), tt.hint)
				}
			}
		})
	}
}

// An ssh_config the parser refuses is a config error, still one line.
func TestLoadHostsUnparseableSSHConfig(t *testing.T) {
	e := newLoadEnv(t, "Host gpu01\n  User a\nMatch exec \"true\"\n  User b\n")
	_, err := Load(e.opts(Options{Flags: []string{"gpu01"}}))
	if err == nil {
		t.Fatal("no error")
	}
	checkConfigError(t, err)
	prefix := "ssh config " + filepath.Join(e.home, ".ssh/config") + ": "
	if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), "Match Exec is not supported") {
		t.Errorf("error = %q, want %q…Match Exec is not supported", err, prefix)
	}
}

func TestLoadHostsTildeNotExpandedRemotely(t *testing.T) {
	e := newLoadEnv(t, "")
	file := testfs.WriteFile(t, e.dir, "hosts.yaml", "defaults:\n  workdir: ~/exp\n  identity_file: ~/.ssh/k\nhosts: [gpu01]\n")
	hosts, err := Load(e.opts(Options{File: file}))
	if err != nil {
		t.Fatal(err)
	}
	if got := hosts[0].Workdir; got != "~/exp" {
		t.Errorf("Workdir = %q: a remote path must keep its ~", got)
	}
	if got, want := hosts[0].IdentityFiles, []string{filepath.Join(e.home, ".ssh/k")}; !reflect.DeepEqual(got, want) {
		t.Errorf("IdentityFiles = %q, want %q", got, want)
	}
}

func TestLoadHostsUnreadableHostsFile(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root reads everything")
	}
	e := newLoadEnv(t, "")
	file := testfs.WriteFile(t, e.dir, "hosts.yaml", "hosts: [a]\n")
	os.Chmod(file, 0)
	_, err := Load(e.opts(Options{File: file}))
	if want := "hosts file: " + file + ": permission denied"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

// Whatever --hosts, --ssh-config or an Include points at, tfhive reads at
// most a few MiB of a regular file: a FIFO, /dev/zero or a huge file is one
// error line (exit 2), at once, instead of a hang or a memory blow-up.
func TestLoadHostsRefusesUnboundedFiles(t *testing.T) {
	pipe := testfs.FIFO(t)
	big := testfs.SparseFile(t, 60<<20)
	atCap := testfs.SparseFile(t, maxHostsFileSize+1)
	tests := []struct {
		name      string
		o         Options
		sshConfig string // ~/.ssh/config content
		err       string
	}{
		{name: "hosts file is a FIFO", o: Options{File: pipe},
			err: "hosts file: " + pipe + ": not a regular file (a FIFO)"},
		{name: "hosts file is /dev/zero", o: Options{File: "/dev/zero"},
			err: "hosts file: /dev/zero: not a regular file (a character device)"},
		{name: "hosts file of 60 MiB", o: Options{File: big},
			err: "hosts file: " + big + ": too large (60 MiB, the limit is 4 MiB)"},
		{name: "hosts file one byte over", o: Options{File: atCap},
			err: "hosts file: " + atCap + ": too large (4194305 bytes, the limit is 4 MiB)"},
		{name: "ssh config is a FIFO", o: Options{Flags: []string{"gpu01"}, SSHConfig: pipe},
			err: "ssh config: " + pipe + ": not a regular file (a FIFO)"},
		{name: "ssh config is /dev/zero", o: Options{Flags: []string{"gpu01"}, SSHConfig: "/dev/zero"},
			err: "ssh config: /dev/zero: not a regular file (a character device)"},
		{name: "ssh config too large", o: Options{Flags: []string{"gpu01"}, SSHConfig: big},
			err: "ssh config: " + big + ": too large (60 MiB, the limit is 4 MiB)"},
		{name: "Include of a FIFO", o: Options{Flags: []string{"gpu01"}},
			sshConfig: "Host gpu01\n  User a\n  Include " + pipe + "\n",
			err:       "ssh config HOME/.ssh/config: Include " + pipe + ": " + pipe + ": not a regular file (a FIFO)"},
		{name: "nested Include of /dev/zero", o: Options{Flags: []string{"gpu01"}},
			sshConfig: "Include=HOME/.ssh/inner # comment\n",
			err:       "ssh config HOME/.ssh/inner: Include /dev/zero: /dev/zero: not a regular file (a character device)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newLoadEnv(t, "")
			r := strings.NewReplacer("HOME", e.home)
			if tt.sshConfig != "" {
				testfs.WriteFile(t, e.home, ".ssh/config", r.Replace(tt.sshConfig))
				testfs.WriteFile(t, e.home, ".ssh/inner", "Include /dev/zero\n")
			}
			_, err := Load(e.opts(tt.o))
			if err == nil {
				t.Fatal("no error")
			}
			checkConfigError(t, err)
			if want := r.Replace(tt.err); err.Error() != want {
				t.Errorf("error\n got: %s\nwant: %s", err, want)
			}
		})
	}
}

// /dev/null is how one says "none" (ssh -F /dev/null): it reads as empty.
func TestLoadHostsDevNull(t *testing.T) {
	e := newLoadEnv(t, "Host gpu01\n  User from-home\n")
	hosts, err := Load(e.opts(Options{Flags: []string{"gpu01"}, SSHConfig: os.DevNull}))
	if err != nil {
		t.Fatal(err)
	}
	if hosts[0].User != "me" {
		t.Errorf("User = %q, want me (an empty ssh config)", hosts[0].User)
	}
	_, err = Load(e.opts(Options{File: os.DevNull}))
	if want := os.DevNull + ": no hosts (the file is empty)"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

// A host name of 253 characters, a DNS name's most, is a host name.
func TestLoadHostsLongestName(t *testing.T) {
	e := newLoadEnv(t, "")
	name := strings.Repeat("a", 253)
	hosts, err := Load(e.opts(Options{Flags: []string{name}}))
	if err != nil || len(hosts) != 1 || hosts[0].Name != name {
		t.Fatalf("got %v, %v", hosts, err)
	}
}
