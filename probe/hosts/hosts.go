// Package hosts is tfhive's hosts configuration: where the fleet comes from
// (-H, --hosts, $TFHIVE_HOSTS, ./hosts.yaml, the per-user hosts file, else
// this machine, and Origin saying which), what each host
// resolves to once its hosts-file entry, the file's defaults, the ssh
// config and the built-in defaults are applied, and the checks that make
// a bad configuration one error line before any host is touched.
//
// It holds data and parsing only: it must not import the SSH transport,
// the executors or the probe (they build on what it resolves), nor
// x/crypto. It imports probe/inventory for the Host it fills and
// probe/localfile to read files with a cap.
package hosts

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/localfile"
)

// Options says where hosts come from. The first source that is set wins:
// Flags (-H), File (--hosts), EnvFile ($TFHIVE_HOSTS), DefaultFile
// (./hosts.yaml) and UserFile (~/.config/tfhive/hosts.yaml) when they
// exist; with none of them the fleet is this machine, run without SSH.
type Options struct {
	Flags []string
	File  string
	// Hostfile is --hostfile: an MPI-style hostfile (hostfile.go). It
	// may not be given with Flags or File.
	Hostfile string
	// EnvFile is $TFHIVE_HOSTS: a file like File, told apart only in
	// what Origin says.
	EnvFile string
	// DefaultFile and UserFile are tried, in that order, when Flags, File
	// and EnvFile are empty (DefaultFile, the constant, and UserFile's
	// result, for the command line). Anything at their path counts, a
	// dangling symlink or an unreadable directory too: it is refused
	// with the reason rather than silently passed over.
	DefaultFile string
	UserFile    string
	// SSHConfig is the ssh_config to honour; "" means the hosts file's
	// `ssh_config:`, else ~/.ssh/config when it exists.
	SSHConfig string
	// Home and LocalUser stand in for the environment (tests set them).
	Home      string
	LocalUser string
}

// OriginKind is which of Options' sources gave the hosts.
type OriginKind int

const (
	FromLocal    OriginKind = iota // none given: this machine
	FromFlags                      // -H
	FromFile                       // --hosts
	FromEnv                        // $TFHIVE_HOSTS
	FromDefault                    // ./hosts.yaml
	FromUser                       // the per-user hosts file
	FromHostfile                   // --hostfile
)

// Origin says where the hosts came from, for the commands to say so.
type Origin struct {
	Kind OriginKind
	// File is the hosts file read, as Options named it.
	File string
	// SSHConfig is the ssh config a hosts file's `ssh_config:` named,
	// resolved ("" when none or when Options.SSHConfig won).
	SSHConfig string
	// Lent is the hosts file whose entries and settings (`defaults:`,
	// `ssh_config:`) -H and --hostfile used: the one that would have
	// given the hosts without them ("" when none). LentKind is where
	// that file came from.
	Lent     string
	LentKind OriginKind
	// Notify is the hosts file's `notify:` (the lent file's with -H or
	// --hostfile), and NotifyFrom "FILE:LINE" where it is written.
	Notify     []string
	NotifyFrom string
	// NotifyShared says why someone other than the user or root may have
	// written the file that gave Notify ("" when nobody may): its
	// commands, which would run as the user, are then not run
	// (notify's targets: tfhive help notifications).
	NotifyShared string
}

// CommandLine is true when the hosts and all their settings were named
// on the command line (-H, --hosts, --hostfile, and with -H or
// --hostfile no hosts file but --hosts's): the user knows where they
// came from.
func (o Origin) CommandLine() bool {
	lentHere := o.Lent == "" || o.LentKind == FromFile
	return o.Kind == FromFlags && lentHere || o.Kind == FromFile || o.Kind == FromHostfile && lentHere
}

// Describe says where the hosts came from in a few words, with home as
// ~: "~/.config/tfhive/hosts.yaml", "$TFHIVE_HOSTS (/lab/hosts.yaml)",
// "./hosts.yaml", "-H", "this machine, without SSH".
func (o Origin) Describe(home string) string {
	file := tildePath(o.File, home)
	switch o.Kind {
	case FromFlags:
		return "-H"
	case FromFile, FromHostfile:
		return file
	case FromEnv:
		return "$TFHIVE_HOSTS (" + file + ")"
	case FromDefault:
		if !filepath.IsAbs(file) && !strings.HasPrefix(file, ".") {
			file = "./" + file
		}
		return file
	case FromUser:
		return file
	}
	return "this machine, without SSH"
}

// Note says in a line where the hosts came from: "hosts from
// ~/.config/tfhive/hosts.yaml", "no hosts given: this machine, without
// SSH".
func (o Origin) Note(home string) string {
	if o.Kind == FromLocal {
		return "no hosts given: " + o.Describe(home)
	}
	if o.Lent != "" {
		return "hosts from " + o.Describe(home) + ", their settings from " + Origin{Kind: o.LentKind, File: o.Lent}.Describe(home)
	}
	return "hosts from " + o.Describe(home)
}

// tildePath writes a path under home as ~/….
func tildePath(p, home string) string {
	if home == "" || home == "/" || !filepath.IsAbs(p) {
		return p
	}
	if rel, err := filepath.Rel(home, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		if rel == "." {
			return "~"
		}
		return "~/" + rel
	}
	return p
}

// UserFile is the per-user hosts file: $XDG_CONFIG_HOME/tfhive/hosts.yaml,
// else ~/.config/tfhive/hosts.yaml. A relative XDG_CONFIG_HOME is ignored,
// as the XDG Base Directory specification says; "" when there is no home.
func UserFile(home, xdgConfigHome string) string {
	dir := xdgConfigHome
	if !filepath.IsAbs(dir) {
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "tfhive", DefaultFile)
}

// Caps on the files Load reads (see localfile).
const (
	// maxHostsFileSize: a hosts file lists a fleet; 4 MiB is some 50,000
	// hosts, which load in a couple of seconds (a 60 MB file took 39 s and
	// 3.4 GB).
	maxHostsFileSize = 4 << 20
	// maxSSHConfigSize: ssh configs are written by hand (or generated per
	// host, still far below this).
	maxSSHConfigSize = 4 << 20
)

// Load resolves the fleet and validates all of it; nothing is dialled.
func Load(o Options) ([]inventory.Host, error) {
	hosts, _, err := LoadOrigin(o)
	return hosts, err
}

// Source is the hosts file Load would read and where it comes from,
// without reading it (Origin.File is "" for -H and this machine).
func Source(o Options) Origin {
	switch {
	case o.Hostfile != "":
		return lend(Origin{Kind: FromHostfile, File: o.Hostfile}, o)
	case len(o.Flags) > 0:
		return lend(Origin{Kind: FromFlags}, o)
	case o.File != "":
		return Origin{Kind: FromFile, File: o.File}
	case o.EnvFile != "":
		return Origin{Kind: FromEnv, File: o.EnvFile}
	case present(o.DefaultFile):
		return Origin{Kind: FromDefault, File: o.DefaultFile}
	case present(o.UserFile):
		return Origin{Kind: FromUser, File: o.UserFile}
	}
	return Origin{Kind: FromLocal}
}

// lend names in origin (-H's, --hostfile's) the hosts file that would
// have given the hosts without them: it lends its entries and settings.
func lend(origin Origin, o Options) Origin {
	o.Flags, o.Hostfile = nil, ""
	if src := Source(o); src.File != "" {
		origin.Lent, origin.LentKind = src.File, src.Kind
	}
	return origin
}

// LoadOrigin is Load, also saying where the hosts came from.
func LoadOrigin(o Options) ([]inventory.Host, Origin, error) {
	origin := Source(o)
	if o.Hostfile != "" && (len(o.Flags) > 0 || o.File != "") {
		other := "--hosts"
		if len(o.Flags) > 0 {
			other = "-H"
		}
		return nil, origin, configErrorf("--hostfile and %s both name the hosts; give one", other).
			withHint("--hostfile reads `host slots=N` lines; --hosts a YAML hosts file; -H hosts by name")
	}
	// With -H or --hostfile, the hosts file that would have given the
	// hosts without them lends its entries and settings: -H picks hosts
	// of it, as pdsh -w picks among a cluster's configured hosts, and a
	// host it does not list gets its `defaults:` and `ssh_config:`.
	var lent *hostsFile
	var lentHosts map[string]hostEntry
	var lentShared, fileShared string
	if origin.Lent != "" {
		data, shared, err := readHostsFile(Origin{Kind: origin.LentKind, File: origin.Lent}, o.Home)
		lentShared = shared
		if err != nil {
			return nil, origin, err
		}
		if lent, err = parseHostsFile(origin.Lent, data); err != nil {
			return nil, origin, err
		}
		lentHosts = lent.entries()
	}
	var hf *hostsFile
	if origin.File != "" {
		data, shared, err := readHostsFile(origin, o.Home)
		fileShared = shared
		if err != nil {
			return nil, origin, err
		}
		if origin.Kind == FromHostfile {
			hf, err = parseHostfile(origin.File, data)
		} else {
			hf, err = parseHostsFile(origin.File, data)
		}
		if err != nil {
			return nil, origin, err
		}
	}
	// --ssh-config wins over the file's, as a flag over a config; the
	// hostfile names no ssh config: the lent file's counts.
	cfgFile, cfgFrom, cfgKind, cfgShared := hf, origin.File, origin.Kind, fileShared
	if lent != nil {
		cfgFile, cfgFrom, cfgKind, cfgShared = lent, origin.Lent, origin.LentKind, lentShared
	}
	if cfgFile != nil && len(cfgFile.Notify) > 0 {
		origin.Notify, origin.NotifyFrom = cfgFile.Notify, fmt.Sprintf("%s:%d", cfgFrom, cfgFile.NotifyLine)
		origin.NotifyShared = cfgShared
	}
	if cfgFile != nil && cfgFile.SSHConfig != "" && o.SSHConfig == "" {
		origin.SSHConfig = filePath(cfgFile.SSHConfig, cfgFrom, o.Home)
	}
	cfgOpts := o
	if origin.SSHConfig != "" {
		cfgOpts.SSHConfig = origin.SSHConfig
	}
	// What a hosts file found by itself names is read as that file is:
	// only when nobody else can have written it.
	owned := origin.SSHConfig != "" && found(cfgKind)
	cfg, err := loadSSHConfig(cfgOpts, owned)
	if err != nil {
		var no *localfile.NotOwnedError
		if errors.As(err, &no) {
			name := origin.SSHConfig
			origin.SSHConfig = ""
			return nil, origin, configErrorf("%s:%d: ssh_config %s refused: %s", cfgFrom, cfgFile.SSHConfigLine, name, no.Why).
				withHint("the ssh config of a hosts file found by itself must be yours or root's, in a directory nobody else can write to; --ssh-config %s reads it anyway, if you trust it", name)
		}
		if origin.SSHConfig != "" {
			return nil, origin, configErrorf("%s:%d: ssh_config: %v", cfgFrom, cfgFile.SSHConfigLine, err)
		}
		return nil, origin, err
	}
	if origin.Kind == FromLocal {
		return []inventory.Host{Local()}, origin, nil
	}
	r := resolver{opts: cfgOpts, cfg: cfg, defaults: defaultsFor(o)}

	var hosts []inventory.Host
	// labels are each host's `name:`, else its alias: a name may not be
	// another host's alias, on any port.
	var labels []label
	if hf == nil {
		specs := splitHostFlags(o.Flags)
		if len(specs) == 0 {
			return nil, origin, configErrorf("-H: no host given")
		}
		for _, spec := range specs {
			expanded, err := expandRanges(spec)
			if err != nil {
				return nil, origin, prefixed("-H "+shown(spec), err)
			}
			if len(hosts)+len(expanded) > maxExpandedHosts {
				return nil, origin, configErrorf("-H: more than %d hosts", maxExpandedHosts)
			}
			for _, s := range expanded {
				e, d, source := hostEntry{Address: s}, hostSettings{}, "-H "+shown(s)
				if lent != nil {
					d = lent.Defaults
					if le, ok := lentHosts[s]; ok {
						e, source = le, fmt.Sprintf("-H %s (%s:%d)", shown(s), origin.Lent, le.Line)
					}
				}
				h, err := r.resolve(e, d, source)
				if err != nil {
					return nil, origin, err
				}
				hosts = append(hosts, h)
				labels = append(labels, label{text: aliasOf(s)})
			}
		}
	} else {
		for _, e := range hf.Hosts {
			d := hf.Defaults
			if lent != nil {
				// A hostfile's line gives a host and its slots; the rest
				// is the lent file's.
				d = lent.Defaults
				if le, ok := lentHosts[e.Address]; ok {
					le.Slots, le.Line = e.Slots, e.Line
					e = le
				}
			}
			h, err := r.resolve(e, d, fmt.Sprintf("%s:%d", origin.File, e.Line))
			if err != nil {
				return nil, origin, err
			}
			hosts = append(hosts, h)
			labels = append(labels, label{text: cmp.Or(e.Name, aliasOf(e.Address)), named: e.Name != ""})
		}
	}
	if err := checkDuplicates(hosts, labels); err != nil {
		return nil, origin, err
	}
	return hosts, origin, nil
}

// readHostsFile reads the hosts file origin names. One tfhive found by
// itself (./hosts.yaml, the per-user file, given the hosts or lending
// them its settings) must be one nobody else can have written
// (localfile.ReadOwned): in a lab's shared /scratch, another user's
// hosts.yaml would otherwise choose the hosts, their `setup:` and where
// --env goes. --hosts, --hostfile and $TFHIVE_HOSTS are the user's own
// choice, read as they are; shared says why another user may have
// written such a file ("" when nobody but the user or root may): a lab's
// shared hosts file still gives the hosts, but not a command to run as
// the user on this machine (its `notify:` commands: Origin.NotifyShared).
func readHostsFile(origin Origin, home string) (data []byte, shared string, err error) {
	what := "hosts file"
	if origin.Kind == FromHostfile {
		what = "hostfile"
	}
	if !found(origin.Kind) {
		data, shared, err := localfile.ReadSaying(origin.File, maxHostsFileSize)
		if err != nil {
			return nil, "", configErrorf("%s: %v", what, localfile.Describe(err))
		}
		return data, shared, nil
	}
	data, err = localfile.ReadOwned(origin.File, maxHostsFileSize)
	var no *localfile.NotOwnedError
	switch {
	case errors.As(err, &no):
		name := origin.Describe(home)
		elsewhere := ""
		if origin.Kind == FromDefault {
			elsewhere = " (or launch from a directory of your own)"
		}
		return nil, "", configErrorf("hosts file %s refused: %s", name, no.Why).
			withHint("a hosts file found by itself must be yours or root's, in a directory nobody else can write to; --hosts %s reads it anyway, if you trust it%s", name, elsewhere)
	case err != nil:
		return nil, "", configErrorf("hosts file: %v", localfile.Describe(err))
	}
	return data, "", nil
}

// found says whether tfhive found the hosts file by itself rather than
// being told it.
func found(k OriginKind) bool { return k == FromDefault || k == FromUser }

// filePath resolves a local path a hosts file names: ~ is the home, and a
// relative path is relative to the file's directory (as OpenSSH resolves
// an Include relative to ~/.ssh, and kubectl a kubeconfig's files), so
// the file means the same from any directory.
func filePath(p, file, home string) string {
	switch {
	case p == "~":
		return home
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(home, p[2:])
	case filepath.IsAbs(p):
		return p
	}
	return filepath.Join(filepath.Dir(file), p)
}

// Local is the fleet when no hosts are given: this machine, reached
// without SSH through the same code paths.
func Local() inventory.Host {
	return inventory.Host{Name: "localhost", Address: "localhost", ClusterAddress: "localhost", Local: true, Source: "default"}
}

// label is a host's `name:` (named), else the host part of its address.
type label struct {
	text  string
	named bool
}

// aliasOf is the host part of an address already parsed once.
func aliasOf(address string) string {
	spec, _ := parseHostSpec(address)
	return spec.Host
}

// checkDuplicates refuses a host given twice, by name or by where it
// resolves (an alias and its IP are one machine: the same GPUs would be
// handed out twice).
//
// Names tell hosts apart in every output (displayName): no two hosts may
// show the same one, and a `name:` is a label of its own: no other host
// may be written with it, on any port (gpu01 and gpu01:2222 would look
// like one machine's two sshds).
func checkDuplicates(hosts []inventory.Host, labels []label) error {
	byName := map[string]int{}
	byLabel := map[string]int{}
	byAddress := map[string]int{}
	for i, h := range hosts {
		first, dup := byName[h.Name]
		if f, ok := byLabel[labels[i].text]; !dup && ok && (labels[i].named || labels[f].named) {
			first, dup = f, true
		}
		switch {
		case dup && (labels[i].named || labels[first].named):
			return configErrorf("%s: name %s is another host's too (%s); a name must be unique", h.Source, labels[i].text, hosts[first].Source)
		case dup:
			return configErrorf("%s: duplicate host %s (first at %s)", h.Source, h.Name, hosts[first].Source)
		}
		byName[h.Name] = i
		if _, seen := byLabel[labels[i].text]; !seen {
			byLabel[labels[i].text] = i
		}
		resolved := net.JoinHostPort(h.Address, strconv.Itoa(h.Port))
		if first, dup := byAddress[resolved]; dup {
			return configErrorf("%s: host %s is %s again (first at %s)", h.Source, h.Name, hosts[first].Name, hosts[first].Source)
		}
		byAddress[resolved] = i
	}
	return nil
}

// present says whether anything is at name: a dangling symlink or a path
// that cannot be looked at counts (reading it says why), only "no such
// file" does not.
func present(name string) bool {
	if name == "" {
		return false
	}
	_, err := os.Lstat(name)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// entries indexes f's hosts by the words that name one: its `name:`,
// its address as written, or the host part of it (gpu03 for
// bob@gpu03:2222) when it has no name; the first host a word names wins.
// Built once: -H may name thousands of hosts of a file of thousands.
func (f *hostsFile) entries() map[string]hostEntry {
	m := map[string]hostEntry{}
	add := func(w string, e hostEntry) {
		if _, ok := m[w]; !ok && w != "" {
			m[w] = e
		}
	}
	for _, e := range f.Hosts {
		add(e.Name, e)
		add(e.Address, e)
		if e.Name == "" {
			add(aliasOf(e.Address), e)
		}
	}
	return m
}
