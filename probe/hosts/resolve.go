package hosts

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kevinburke/ssh_config"

	"github.com/tfhive/tfhive/probe/inventory"
)

type resolver struct {
	opts     Options
	cfg      *ssh_config.Config
	defaults defaults
}

// resolve merges a host's sources, applies the defaults and validates it.
func (r resolver) resolve(e hostEntry, d hostSettings, source string) (inventory.Host, error) {
	return r.resolveDepth(e, d, source, 0)
}

func (r resolver) resolveDepth(e hostEntry, d hostSettings, source string, depth int) (inventory.Host, error) {
	c, err := r.merge(e, d, source, depth)
	if err != nil {
		return inventory.Host{}, err
	}
	c.SetDefaults(r.defaults)
	if err := c.Validate(); err != nil {
		return inventory.Host{}, err
	}
	return c.host(), nil
}

// merge takes each setting from the most specific source that sets it: the
// entry itself (and the user@/:port in its address), the file's defaults,
// then the ssh config.
func (r resolver) merge(e hostEntry, d hostSettings, source string, depth int) (*hostConfig, error) {
	fail := func(format string, a ...any) *ConfigError {
		return configErrorf("%s: %s", source, fmt.Sprintf(format, a...))
	}
	spec, err := parseHostSpec(e.Address)
	if err != nil {
		return nil, fail("%v", err)
	}
	if spec.User != "" && e.User != nil && *e.User != spec.User {
		return nil, fail("user given twice (%s in address, %s in user:)", spec.User, *e.User)
	}
	if spec.Port != 0 && e.Port != nil && *e.Port != spec.Port {
		return nil, fail("port given twice (%d in address, %d in port:)", spec.Port, *e.Port)
	}
	alias := spec.Host
	c := &hostConfig{alias: alias, Host: inventory.Host{Source: source, GPUs: e.GPUs, Slots: e.Slots, ClusterAddress: e.ClusterAddress,
		ClusterAddressSet: e.ClusterAddress != ""}}
	get := func(key string) string {
		v, _ := r.cfg.Get(alias, key)
		return strings.TrimSpace(v)
	}

	c.User = cmp.Or(spec.User, deref(e.User), deref(d.User), get("User"))
	// The port written with the host (its address's, its own port:)
	// and the one its alias alone gets (defaults:, ssh config, 22).
	own := cmp.Or(spec.Port, derefInt(e.Port))
	base := derefInt(d.Port)
	if p := get("Port"); base == 0 && p != "" {
		port, err := parsePort(p)
		if err != nil {
			return nil, fail("ssh config Port: %v", err)
		}
		base = port
	}
	c.Port = cmp.Or(own, base)
	c.Name = displayName(e.Name, alias, own, cmp.Or(base, DefaultPort))
	jump := cmp.Or(deref(e.Jump), deref(d.Jump))
	identity := cmp.Or(deref(e.IdentityFile), deref(d.IdentityFile))
	c.Workdir = cmp.Or(deref(e.Workdir), deref(d.Workdir))
	c.Setup = cmp.Or(deref(e.Setup), deref(d.Setup))
	c.Env = mergeEnv(d.Env, e.Env)

	// %p and %r are the port and user the host ends up with, defaults
	// included, as in OpenSSH.
	tok := r.tokens(alias, cmp.Or(c.Port, r.defaults.Port), cmp.Or(c.User, r.defaults.User))
	if hn := get("HostName"); hn != "" {
		c.Address = tok.expand(hn)
		tok['h'] = c.Address
	}
	if pc := get("ProxyCommand"); pc != "" && !strings.EqualFold(pc, "none") {
		return nil, fail("ProxyCommand in the ssh config is not supported").withHint("use ProxyJump (or `jump:` in the hosts file) instead")
	}
	if jump == "" {
		if j := get("ProxyJump"); !strings.EqualFold(j, "none") {
			jump = j
		}
	}
	c.Jump = jump
	c.ssh = sshView{config: r.opts.SSHConfig, port: DefaultPort, user: cmp.Or(get("User"), r.opts.LocalUser), jump: get("ProxyJump")}
	if p, err := strconv.Atoi(get("Port")); err == nil {
		c.ssh.port = p
	}
	if jump != "" {
		via, err := r.resolveJump(jump, source, depth)
		if err != nil {
			return nil, err
		}
		c.Via = via
	}
	if identity != "" {
		c.IdentityFiles = []string{r.expandPath(identity)}
	} else if files, _ := r.cfg.GetAll(alias, "IdentityFile"); len(files) > 0 {
		for _, f := range files {
			c.IdentityFiles = append(c.IdentityFiles, r.expandPath(tok.expand(f)))
		}
	}
	for _, f := range strings.Fields(get("UserKnownHostsFile")) {
		c.KnownHostsFiles = append(c.KnownHostsFiles, r.expandPath(tok.expand(f)))
	}
	c.HostKeyAlias = get("HostKeyAlias")
	if v := get("ServerAliveInterval"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fail("ssh config ServerAliveInterval %q: want seconds", v)
		}
		c.KeepAlive = time.Duration(n) * time.Second
	}
	if v := get("ServerAliveCountMax"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fail("ssh config ServerAliveCountMax %q: want a positive number", v)
		}
		c.KeepAliveMax = n
	}
	return c, nil
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
		hop, err := r.resolveDepth(hostEntry{Address: strings.TrimSpace(s)}, hostSettings{}, source+" (jump "+shown(strings.TrimSpace(s))+")", depth+1)
		if err != nil {
			return nil, err
		}
		hops = append(hops, hop.Via...)
		hop.Via = nil
		hops = append(hops, hop)
	}
	return hops, nil
}

// tokens are ssh_config's %-expansions (ssh_config(5) TOKENS).
type tokens map[byte]string

func (r resolver) tokens(alias string, port int, user string) tokens {
	return tokens{'%': "%", 'h': alias, 'n': alias, 'p': strconv.Itoa(port),
		'r': user, 'u': r.opts.LocalUser, 'd': r.opts.Home, 'i': strconv.Itoa(os.Getuid())}
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
