package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kevinburke/ssh_config"

	"github.com/tfhive/tfhive/probe/inventory"
)

// HostOptions says where hosts come from. The first source that is set wins:
// Flags (-H), File (--hosts or $TFHIVE_HOSTS), ./hosts.yaml; with none of
// them the fleet is this machine, run without SSH.
type HostOptions struct {
	Flags []string
	File  string
	// DefaultFile is tried when Flags and File are empty ("hosts.yaml").
	DefaultFile string
	// SSHConfig is the ssh_config to honour; "" means ~/.ssh/config when it
	// exists.
	SSHConfig string
	// Home and LocalUser stand in for the environment (tests set them).
	Home      string
	LocalUser string
}

// LoadHosts resolves the fleet and validates all of it; nothing is dialled.
func LoadHosts(o HostOptions) ([]inventory.Host, error) {
	cfg, err := loadSSHConfig(o)
	if err != nil {
		return nil, err
	}
	r := resolver{opts: o, cfg: cfg}

	var hosts []inventory.Host
	switch {
	case len(o.Flags) > 0:
		specs := splitHostFlags(o.Flags)
		if len(specs) == 0 {
			return nil, configErrorf("-H: no host given")
		}
		for _, s := range specs {
			h, err := r.resolve(hostEntry{Address: s}, hostSettings{}, "-H "+s)
			if err != nil {
				return nil, err
			}
			hosts = append(hosts, h)
		}
	case o.File != "" || fileExists(o.DefaultFile):
		name := o.File
		if name == "" {
			name = o.DefaultFile
		}
		data, err := readLocalFile(name, maxHostsFileSize)
		if err != nil {
			return nil, configErrorf("hosts file: %v", unwrapPathError(err))
		}
		hf, err := parseHostsFile(name, data)
		if err != nil {
			return nil, err
		}
		for _, e := range hf.Hosts {
			h, err := r.resolve(e, hf.Defaults, fmt.Sprintf("%s:%d", name, e.Line))
			if err != nil {
				return nil, err
			}
			hosts = append(hosts, h)
		}
	default:
		return []inventory.Host{LocalHost()}, nil
	}
	if err := checkDuplicates(hosts); err != nil {
		return nil, err
	}
	return hosts, nil
}

// LocalHost is the fleet when no hosts are given: this machine, reached
// without SSH through the same code paths.
func LocalHost() inventory.Host {
	return inventory.Host{Name: "localhost", Address: "localhost", ClusterAddress: "localhost", Local: true, Source: "default"}
}

// checkDuplicates refuses a host given twice, by name or by where it
// resolves (an alias and its IP are one machine: the same GPUs would be
// handed out twice).
func checkDuplicates(hosts []inventory.Host) error {
	seen := map[string]inventory.Host{}
	for _, h := range hosts {
		name := h.Name
		if h.Port != 22 {
			name += ":" + strconv.Itoa(h.Port)
		}
		resolved := "@" + net.JoinHostPort(h.Address, strconv.Itoa(h.Port))
		for _, key := range []string{name, resolved} {
			if first, dup := seen[key]; dup {
				if key == resolved && first.Name != h.Name {
					return configErrorf("%s: host %s is %s again (first at %s)", h.Source, name, first.Name, first.Source)
				}
				return configErrorf("%s: duplicate host %s (first at %s)", h.Source, name, first.Source)
			}
			seen[key] = h
		}
	}
	return nil
}

type resolver struct {
	opts HostOptions
	cfg  *ssh_config.Config
}

// resolve merges, most specific first: the entry itself (and the user@/:port
// in its address), the file's defaults, ~/.ssh/config, then built-ins.
func (r resolver) resolve(e hostEntry, d hostSettings, source string) (inventory.Host, error) {
	return r.resolveDepth(e, d, source, 0)
}

func (r resolver) resolveDepth(e hostEntry, d hostSettings, source string, depth int) (inventory.Host, error) {
	fail := func(format string, a ...any) error {
		return configErrorf("%s: %s", source, fmt.Sprintf(format, a...))
	}
	spec, err := parseHostSpec(e.Address)
	if err != nil {
		return inventory.Host{}, fail("%v", err)
	}
	if spec.User != "" && e.User != nil && *e.User != spec.User {
		return inventory.Host{}, fail("user given twice (%s in address, %s in user:)", spec.User, *e.User)
	}
	if spec.Port != 0 && e.Port != nil && *e.Port != spec.Port {
		return inventory.Host{}, fail("port given twice (%d in address, %d in port:)", spec.Port, *e.Port)
	}
	alias := spec.Host
	h := inventory.Host{Name: alias, Source: source, GPUs: e.GPUs, ClusterAddress: e.ClusterAddress}

	h.User = first(spec.User, deref(e.User), deref(d.User))
	if p := firstInt(spec.Port, derefInt(e.Port), derefInt(d.Port)); p != 0 {
		h.Port = p
	}
	jump := first(deref(e.Jump), deref(d.Jump))
	identity := first(deref(e.IdentityFile), deref(d.IdentityFile))
	h.Workdir = first(deref(e.Workdir), deref(d.Workdir))
	h.Setup = first(deref(e.Setup), deref(d.Setup))
	h.Env = mergeEnv(d.Env, e.Env)

	// ssh_config fills what the hosts file left open.
	get := func(key string) string {
		v, _ := r.cfg.Get(alias, key)
		return strings.TrimSpace(v)
	}
	if h.User == "" {
		h.User = first(get("User"), r.opts.LocalUser)
	}
	if h.Port == 0 {
		if p := get("Port"); p != "" {
			port, err := parsePort(p)
			if err != nil {
				return inventory.Host{}, fail("ssh config Port: %v", err)
			}
			h.Port = port
		} else {
			h.Port = 22
		}
	}
	tok := r.tokens(alias, h)
	h.Address = alias
	if hn := get("HostName"); hn != "" {
		h.Address = tok.expand(hn)
		tok['h'] = h.Address
	}
	if pc := get("ProxyCommand"); pc != "" && !strings.EqualFold(pc, "none") {
		return inventory.Host{}, fail("ProxyCommand in the ssh config is not supported").(*ConfigError).withHint("use ProxyJump (or `jump:` in the hosts file) instead")
	}
	if jump == "" {
		if j := get("ProxyJump"); !strings.EqualFold(j, "none") {
			jump = j
		}
	}
	h.Jump = jump
	if jump != "" {
		via, err := r.resolveJump(jump, source, depth)
		if err != nil {
			return inventory.Host{}, err
		}
		h.Via = via
	}
	if identity != "" {
		h.IdentityFiles = []string{r.expandPath(identity)}
	} else if files, _ := r.cfg.GetAll(alias, "IdentityFile"); len(files) > 0 {
		for _, f := range files {
			h.IdentityFiles = append(h.IdentityFiles, r.expandPath(tok.expand(f)))
		}
	} else {
		for _, f := range defaultIdentities {
			h.IdentityFiles = append(h.IdentityFiles, filepath.Join(r.opts.Home, ".ssh", f))
		}
	}
	if kh := get("UserKnownHostsFile"); kh != "" {
		for _, f := range strings.Fields(kh) {
			h.KnownHostsFiles = append(h.KnownHostsFiles, r.expandPath(tok.expand(f)))
		}
	} else {
		h.KnownHostsFiles = []string{filepath.Join(r.opts.Home, ".ssh", "known_hosts")}
	}
	h.KnownHostsFiles = append(h.KnownHostsFiles, "/etc/ssh/ssh_known_hosts")
	h.HostKeyAlias = get("HostKeyAlias")
	if v := get("ServerAliveInterval"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return inventory.Host{}, fail("ssh config ServerAliveInterval %q: want seconds", v)
		}
		h.KeepAlive = time.Duration(n) * time.Second
	}
	if v := get("ServerAliveCountMax"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return inventory.Host{}, fail("ssh config ServerAliveCountMax %q: want a positive number", v)
		}
		h.KeepAliveMax = n
	}
	if h.ClusterAddress == "" {
		h.ClusterAddress = h.Address
	}
	if !hostNameRE.MatchString(h.Address) && !isIP(h.Address) {
		return inventory.Host{}, fail("ssh config HostName %q is not a host name or IP address", h.Address)
	}
	if h.User == "" {
		return inventory.Host{}, fail("no user name (set user: or User in the ssh config)")
	}
	return h, nil
}

// maxJumpDepth bounds ProxyJump chains that name each other in ssh_config.
const maxJumpDepth = 8

// resolveJump resolves a ProxyJump chain ("a,user@b:2222") into the hosts to
// dial in order; each hop gets its own ssh_config settings (and its own
// ProxyJump), as in OpenSSH.
func (r resolver) resolveJump(jump, source string, depth int) ([]inventory.Host, error) {
	if depth > maxJumpDepth {
		return nil, configErrorf("%s: ProxyJump chain longer than %d hops (a loop in the ssh config?)", source, maxJumpDepth)
	}
	var hops []inventory.Host
	for _, s := range strings.Split(jump, ",") {
		hop, err := r.resolveDepth(hostEntry{Address: strings.TrimSpace(s)}, hostSettings{}, source+" (jump "+strings.TrimSpace(s)+")", depth+1)
		if err != nil {
			return nil, err
		}
		hops = append(hops, hop.Via...)
		hop.Via = nil
		hops = append(hops, hop)
	}
	return hops, nil
}

func loadSSHConfig(o HostOptions) (*ssh_config.Config, error) {
	name := o.SSHConfig
	explicit := name != ""
	if !explicit {
		name = filepath.Join(o.Home, ".ssh", "config")
	}
	data, err := readLocalFile(name, maxSSHConfigSize)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return &ssh_config.Config{}, nil
		}
		return nil, configErrorf("ssh config: %v", unwrapPathError(err))
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

// checkIncludes applies readLocalFile's limits to the files the ssh config
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
				inc, err := readLocalFile(m, maxSSHConfigSize)
				if err != nil {
					return configErrorf("ssh config %s: Include %s: %v", name, pat, unwrapPathError(err))
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
// home directory, not HostOptions.Home.
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

// tokens are ssh_config's %-expansions (ssh_config(5) TOKENS).
type tokens map[byte]string

func (r resolver) tokens(alias string, h inventory.Host) tokens {
	return tokens{'%': "%", 'h': alias, 'n': alias, 'p': strconv.Itoa(h.Port),
		'r': h.User, 'u': r.opts.LocalUser, 'd': r.opts.Home, 'i': strconv.Itoa(os.Getuid())}
}

func (t tokens) expand(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+1 < len(s) {
			if v, ok := t[s[i+1]]; ok {
				b.WriteString(v)
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// expandPath expands a leading ~ locally; only for local files (keys,
// known_hosts), never for remote paths such as workdir.
func (r resolver) expandPath(p string) string {
	if p == "~" {
		return r.opts.Home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(r.opts.Home, p[2:])
	}
	return p
}

func mergeEnv(maps ...map[string]string) map[string]string {
	var out map[string]string
	for _, m := range maps {
		for k, v := range m {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstInt(vals ...int) int {
	for _, v := range vals {
		if v != 0 {
			return v
		}
	}
	return 0
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func fileExists(name string) bool {
	if name == "" {
		return false
	}
	_, err := os.Stat(name)
	return err == nil
}

func isIP(s string) bool { return net.ParseIP(s) != nil }

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}
