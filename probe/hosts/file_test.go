package hosts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/internal/testfs"
)

func sp(s string) *string { return &s }
func ip(n int) *int       { return &n }

const knownEntryKeys = "address, name, cluster_address, gpus, user, port, identity_file, jump, workdir, setup, env"

func TestParseHostsFileErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		err  string // exact
		hint string // exact, when set
	}{
		// Unknown keys, with the known ones listed.
		{name: "unknown top-level key",
			in:  "defaults:\n  user: a\nhost:\n  - gpu01\n",
			err: `h.yaml:3: unknown key "host" (known: ssh_config, notify, defaults, hosts)`},
		{name: "unknown key in defaults",
			in:  "defaults:\n  user: a\n  User: b\nhosts: [gpu01]\n",
			err: `h.yaml:3: unknown key "User" (known: user, port, identity_file, jump, workdir, setup, env)`},
		{name: "cluster_address is not a default",
			in:  "defaults:\n  cluster_address: 10.0.0.1\nhosts: [gpu01]\n",
			err: `h.yaml:2: unknown key "cluster_address" (known: user, port, identity_file, jump, workdir, setup, env)`},
		{name: "unknown key in a host",
			in:  "hosts:\n  - address: gpu01\n  - address: gpu02\n    gpu: [0]\n",
			err: `h.yaml:4: unknown key "gpu" (known: ` + knownEntryKeys + `)`},
		{name: "unknown key in a flow host",
			in:  "hosts:\n  - gpu01\n  - {address: gpu02, hostname: x}\n",
			err: `h.yaml:3: unknown key "hostname" (known: ` + knownEntryKeys + `)`},
		{name: "yaml merge key is unknown",
			in:  "hosts:\n  - address: gpu01\n    <<: {user: a}\n",
			err: `h.yaml:3: unknown key "<<" (known: ` + knownEntryKeys + `)`},

		// Duplicates (yaml.v3 does not catch them when decoding to a Node).
		{name: "duplicate top-level key",
			in:  "hosts:\n  - gpu01\nhosts:\n  - gpu02\n",
			err: `h.yaml:3: hosts is set twice (first on line 1)`},
		{name: "duplicate key in a host",
			in:  "hosts:\n  - address: gpu01\n    user: a\n    port: 22\n    user: b\n",
			err: `h.yaml:5: user is set twice (first on line 3)`},
		{name: "duplicate key in defaults",
			in:  "defaults:\n  port: 22\n  port: 2222\nhosts: [gpu01]\n",
			err: `h.yaml:3: port is set twice (first on line 2)`},
		{name: "duplicate before unknown",
			in:  "hosts:\n  - address: gpu01\n    bogus: 1\n    bogus: 2\n",
			err: `h.yaml:3: unknown key "bogus" (known: ` + knownEntryKeys + `)`},

		// Ports.
		{name: "port 0", in: "hosts:\n  - address: gpu01\n    port: 0\n",
			err: `h.yaml:3: port: bad port "0" (want 1-65535)`},
		{name: "port 65536", in: "defaults:\n  port: 65536\nhosts: [gpu01]\n",
			err: `h.yaml:2: port: bad port "65536" (want 1-65535)`},
		{name: "port word", in: "hosts:\n  - address: gpu01\n\n    port: ssh\n",
			err: `h.yaml:4: port: bad port "ssh" (want 1-65535)`},
		{name: "port float", in: "hosts:\n  - address: gpu01\n    port: 22.5\n",
			err: `h.yaml:3: port: bad port "22.5" (want 1-65535)`},
		{name: "port empty", in: "hosts:\n  - address: gpu01\n    port:\n",
			err: `h.yaml:3: port: bad port "" (want 1-65535)`},
		{name: "port list", in: "hosts:\n  - address: gpu01\n    port: [22]\n",
			err: `h.yaml:3: port: expected a number`},

		// GPUs.
		{name: "negative gpu", in: "hosts:\n  - address: gpu01\n    gpus: [0, -1]\n",
			err: `h.yaml:3: gpus: "-1" is not a GPU index`},
		{name: "duplicate gpu", in: "hosts:\n  - address: gpu01\n    gpus:\n      - 1\n      - 0\n      - 1\n",
			err: `h.yaml:6: gpus: GPU 1 listed twice`},
		{name: "non-integer gpu", in: "hosts:\n  - address: gpu01\n    gpus: [0, 1.5]\n",
			err: `h.yaml:3: gpus: "1.5" is not a GPU index`},
		{name: "gpu name", in: "hosts:\n  - address: gpu01\n    gpus: [all]\n",
			err: `h.yaml:3: gpus: "all" is not a GPU index`},
		{name: "gpus scalar", in: "hosts:\n  - address: gpu01\n    gpus: 0\n",
			err: `h.yaml:3: gpus: expected a list of GPU indices like [0, 1]`},
		{name: "gpus string list", in: "hosts:\n  - address: gpu01\n    gpus: \"0,1\"\n",
			err: `h.yaml:3: gpus: expected a list of GPU indices like [0, 1]`},

		// Hosts.
		{name: "host without address", in: "hosts:\n  - gpu01\n  - user: a\n    port: 22\n",
			err: `h.yaml:3: host without ` + "`address:`"},
		{name: "empty address", in: "hosts:\n  - address: \"\"\n",
			err: `h.yaml:2: address: expected a non-empty value`},
		{name: "null address", in: "hosts:\n  - address:\n",
			err: `h.yaml:2: address: expected a non-empty value`},
		{name: "null host item", in: "hosts:\n  - gpu01\n  -\n",
			err: `h.yaml:3: host without ` + "`address:`"},
		{name: "host is a list", in: "hosts:\n  - gpu01\n  - [gpu02]\n",
			err: `h.yaml:3: expected a host (an address, or a mapping with ` + "`address:`)"},
		{name: "bad cluster_address", in: "hosts:\n  - address: gpu01\n    cluster_address: a;b\n",
			err: `h.yaml:3: cluster_address "a;b" is not a host name or IP address`},
		{name: "bad user", in: "hosts:\n  - address: gpu01\n    user: $(id)\n",
			err: `h.yaml:3: user: bad user name "$(id)"`},
		{name: "bad default user", in: "defaults:\n  user: a b\nhosts: [gpu01]\n",
			err: `h.yaml:2: user: bad user name "a b"`},
		{name: "user list", in: "hosts:\n  - address: gpu01\n    user: [a]\n",
			err: `h.yaml:3: user: expected a non-empty value`},
		{name: "empty setup", in: "hosts:\n  - address: gpu01\n    setup: \"  \"\n",
			err: `h.yaml:3: setup: expected a non-empty value`},

		// Structure.
		{name: "empty file", in: "",
			err:  `h.yaml: no hosts (the file is empty)`,
			hint: "list hosts under `hosts:`; see hosts.example.yaml"},
		{name: "comments only", in: "# nothing yet\n\n",
			err: `h.yaml: no hosts (the file is empty)`},
		{name: "empty hosts list", in: "defaults:\n  user: a\nhosts: []\n",
			err:  "h.yaml: no hosts (the `hosts:` list is missing or empty)",
			hint: "list hosts under `hosts:`; see hosts.example.yaml"},
		{name: "no hosts key", in: "defaults:\n  user: a\n",
			err: "h.yaml: no hosts (the `hosts:` list is missing or empty)"},
		{name: "hosts null", in: "defaults:\n  user: a\nhosts:\n",
			err: `h.yaml:3: hosts: expected a list`},
		{name: "hosts mapping", in: "hosts:\n  gpu01:\n    user: a\n",
			err: `h.yaml:2: hosts: expected a list`},
		{name: "hosts scalar", in: "hosts: gpu01\n",
			err: `h.yaml:1: hosts: expected a list`},
		{name: "defaults list", in: "defaults:\n  - user: a\nhosts: [gpu01]\n",
			err: `h.yaml:2: defaults: expected a mapping`},
		{name: "top level list", in: "- gpu01\n- gpu02\n",
			err: "h.yaml:1: expected a mapping with `defaults:` and `hosts:`"},
		{name: "top level scalar", in: "\n\ngpu01\n",
			err: "h.yaml:3: expected a mapping with `defaults:` and `hosts:`"},
		{name: "non-scalar key", in: "hosts: [gpu01]\n? [a]\n: b\n",
			err: `h.yaml:2: expected a key`},

		// YAML syntax errors keep the line yaml.v3 gives.
		{name: "tab indentation", in: "hosts:\n\t- gpu01\n",
			err: `h.yaml:2: found character that cannot start any token`},
		{name: "unterminated quote", in: "defaults:\n  user: x\nhosts:\n  - address: \"gpu01\n",
			err: `h.yaml:4: found unexpected end of stream`},
		{name: "unclosed flow list", in: "hosts: [gpu01\n",
			err: `h.yaml:1: did not find expected ',' or ']'`},
		{name: "position-less yaml error", in: "hosts: [gpu01]\x01\n",
			err: `h.yaml: control characters are not allowed`},

		// env.
		{name: "env bad name", in: "hosts:\n  - address: gpu01\n    env:\n      OK: 1\n      1BAD: x\n",
			err: `h.yaml:5: env: "1BAD" is not a valid variable name`},
		{name: "env name with dash", in: "defaults:\n  env: {NCCL-DEBUG: x}\nhosts: [gpu01]\n",
			err: `h.yaml:2: env: "NCCL-DEBUG" is not a valid variable name`},
		{name: "env name with equals", in: "defaults:\n  env:\n    \"A=B\": x\nhosts: [gpu01]\n",
			err: `h.yaml:3: env: "A=B" is not a valid variable name`},
		{name: "env list value", in: "hosts:\n  - address: gpu01\n    env:\n      PATHS: [a, b]\n",
			err: `h.yaml:4: env: PATHS: expected a string value`},
		{name: "env map value", in: "hosts:\n  - address: gpu01\n    env:\n      A:\n        b: c\n",
			err: `h.yaml:5: env: A: expected a string value`},
		{name: "env duplicate", in: "hosts:\n  - address: gpu01\n    env:\n      A: 1\n      A: 2\n",
			err: `h.yaml:5: env: A is set twice`},
		{name: "env not a mapping", in: "hosts:\n  - address: gpu01\n    env: [A=1]\n",
			err: `h.yaml:3: env: expected a mapping of NAME: value`},
		{name: "notify empty", in: "notify:\nhosts: [gpu01]\n",
			err: `h.yaml:1: notify: expected a non-empty value`},
		{name: "notify mapping", in: "notify: {url: x}\nhosts: [gpu01]\n",
			err: `h.yaml:1: notify: expected a target (a command, or an https:// URL) or a list of them`},
		{name: "notify list of lists", in: "notify: [[a]]\nhosts: [gpu01]\n",
			err: `h.yaml:1: notify: expected a non-empty value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hf, err := parseHostsFile("h.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("no error; parsed %+v\nwant: %s", hf, tt.err)
			}
			if err.Error() != tt.err {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.err)
			}
			checkConfigError(t, err)
			if tt.hint != "" {
				var ce *ConfigError
				if errors.As(err, &ce); ce.Hint() != tt.hint {
					t.Errorf("hint\n got: %s\nwant: %s", ce.Hint(), tt.hint)
				}
			}
		})
	}
}

func TestParseHostsFile(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *hostsFile
	}{
		{
			name: "scalar shorthand",
			in:   "hosts:\n  - gpu01\n  - bob@gpu02:2222\n",
			want: &hostsFile{Hosts: []hostEntry{
				{Address: "gpu01", Line: 2},
				{Address: "bob@gpu02:2222", Line: 3},
			}},
		},
		{
			name: "notify, one and a list",
			in:   "notify: https://chat.example/hooks/x\nhosts: [gpu01]\n",
			want: &hostsFile{Notify: []string{"https://chat.example/hooks/x"}, NotifyLine: 1, Hosts: []hostEntry{{Address: "gpu01", Line: 2}}},
		},
		{
			name: "notify list",
			in:   "notify:\n  - notify-send tfhive\n  - https://chat.example/hooks/x\nhosts: [gpu01]\n",
			want: &hostsFile{Notify: []string{"notify-send tfhive", "https://chat.example/hooks/x"}, NotifyLine: 2, Hosts: []hostEntry{{Address: "gpu01", Line: 4}}},
		},
		{
			name: "flow list",
			in:   "hosts: [gpu01, gpu02]\n",
			want: &hostsFile{Hosts: []hostEntry{
				{Address: "gpu01", Line: 1},
				{Address: "gpu02", Line: 1},
			}},
		},
		{
			name: "every key",
			in: `# comment
defaults:
  user: alice
  port: 2200
  identity_file: ~/.ssh/lab
  jump: bastion
  workdir: ~/exp
  setup: source ~/venv/bin/activate
  env:
    NCCL_DEBUG: WARN
    _X1: "a b"
hosts:
  - address: gpu01
    cluster_address: 10.40.0.11
    gpus: [2, 0, 1]
    user: bob
    port: "22"
    identity_file: /k
    jump: j2
    workdir: /w
    setup: |
      module load cuda
      echo ok
    env: {NCCL_DEBUG: INFO, ONLY_HERE: 1}
  - gpu03
  - address: gpu04
    gpus: []
`,
			want: &hostsFile{
				Defaults: hostSettings{
					User: sp("alice"), Port: ip(2200), IdentityFile: sp("~/.ssh/lab"), Jump: sp("bastion"),
					Workdir: sp("~/exp"), Setup: sp("source ~/venv/bin/activate"),
					Env: map[string]string{"NCCL_DEBUG": "WARN", "_X1": "a b"},
				},
				Hosts: []hostEntry{
					{
						hostSettings: hostSettings{
							User: sp("bob"), Port: ip(22), IdentityFile: sp("/k"), Jump: sp("j2"), Workdir: sp("/w"),
							Setup: sp("module load cuda\necho ok\n"),
							Env:   map[string]string{"NCCL_DEBUG": "INFO", "ONLY_HERE": "1"},
						},
						Address: "gpu01", ClusterAddress: "10.40.0.11", GPUs: []int{0, 1, 2}, Line: 13,
					},
					{Address: "gpu03", Line: 25},
					{Address: "gpu04", GPUs: []int{}, Line: 26},
				},
			},
		},
		{
			name: "hosts before defaults",
			in:   "hosts:\n  - gpu01\ndefaults:\n  user: a\n",
			want: &hostsFile{Defaults: hostSettings{User: sp("a")}, Hosts: []hostEntry{{Address: "gpu01", Line: 2}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseHostsFile("h.yaml", []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %s\nwant %s", dumpHostsFile(got), dumpHostsFile(tt.want))
			}
		})
	}
}

// TestHostsFileResolved checks what a hosts file means once Load has
// applied defaults: inheritance, the address shorthand, env merging, and
// the names: a port written with a host that is not the defaults' is part
// of its name (gpu02's own port: 22 included), the defaults' is not.
func TestHostsFileResolved(t *testing.T) {
	home := t.TempDir()
	file := testfs.WriteFile(t, t.TempDir(), "hosts.yaml", `defaults:
  user: alice
  port: 2200
  workdir: ~/exp
  setup: conda activate tf
  env:
    NCCL_DEBUG: WARN
    SHARED: from-defaults
hosts:
  - gpu01
  - address: gpu02
    user: bob
    port: 22
    workdir: /scratch
    env:
      SHARED: from-host
      EXTRA: "1"
  - carol@gpu03:2222
`)
	hosts, err := Load(Options{File: file, Home: home, LocalUser: "me"})
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Name, User, Workdir, Setup, Source string
		Port                               int
		Env                                map[string]string
	}
	var got []view
	for _, h := range hosts {
		got = append(got, view{h.Name, h.User, h.Workdir, h.Setup, filepath.Base(h.Source), h.Port, h.Env})
	}
	want := []view{
		{"gpu01", "alice", "~/exp", "conda activate tf", "hosts.yaml:10", 2200,
			map[string]string{"NCCL_DEBUG": "WARN", "SHARED": "from-defaults"}},
		{"gpu02:22", "bob", "/scratch", "conda activate tf", "hosts.yaml:11", 22,
			map[string]string{"NCCL_DEBUG": "WARN", "SHARED": "from-host", "EXTRA": "1"}},
		{"gpu03:2222", "carol", "~/exp", "conda activate tf", "hosts.yaml:18", 2222,
			map[string]string{"NCCL_DEBUG": "WARN", "SHARED": "from-defaults"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestHostsExampleParses(t *testing.T) {
	const example = "../../hosts.example.yaml"
	data, err := os.ReadFile(example)
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("hosts.example.yaml not written yet")
	}
	if err != nil {
		t.Fatal(err)
	}
	hf, err := parseHostsFile(example, data)
	if err != nil {
		t.Fatalf("%s does not parse: %v", example, err)
	}
	if len(hf.Hosts) == 0 {
		t.Fatalf("%s has no hosts", example)
	}
	// Every key a host may have should be shown somewhere in the example.
	for _, k := range entryKeys {
		if !regexp.MustCompile(`(?m)^\s*(- )?` + k + `:`).Match(data) {
			t.Errorf("%s does not show the %q key", example, k)
		}
	}
	// And the whole file must survive Load's checks too (no ssh_config,
	// an empty home).
	home := t.TempDir()
	if _, err := Load(Options{File: example, Home: home, SSHConfig: testfs.WriteFile(t, home, "ssh_config", ""), LocalUser: "me"}); err != nil {
		t.Fatalf("Load(%s): %v", example, err)
	}
}

func dumpHostsFile(hf *hostsFile) string {
	if hf == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "defaults %s", dumpSettings(hf.Defaults))
	for _, e := range hf.Hosts {
		fmt.Fprintf(&b, "\n  host %q cluster=%q gpus=%#v line=%d %s", e.Address, e.ClusterAddress, e.GPUs, e.Line, dumpSettings(e.hostSettings))
	}
	return b.String()
}

func dumpSettings(s hostSettings) string {
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return strconv.Quote(*p)
	}
	port := "<nil>"
	if s.Port != nil {
		port = strconv.Itoa(*s.Port)
	}
	return fmt.Sprintf("{user=%s port=%s identity=%s jump=%s workdir=%s setup=%s env=%v}",
		str(s.User), port, str(s.IdentityFile), str(s.Jump), str(s.Workdir), str(s.Setup), s.Env)
}
