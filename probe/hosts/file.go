package hosts

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// hostSettings are the keys a host inherits from `defaults:` unless it sets
// them itself. Nil means "not set here".
type hostSettings struct {
	User         *string
	Port         *int
	IdentityFile *string
	Jump         *string
	Workdir      *string
	Setup        *string
	Env          map[string]string
}

// hostEntry is one item of `hosts:` as written, with the line it starts on.
type hostEntry struct {
	hostSettings
	Address string
	// Name, when set, is the host's label in output instead of its
	// address's host part; the address is still what is dialled and
	// matched against the ssh config.
	Name           string
	ClusterAddress string
	GPUs           []int // nil: all GPUs
	// Slots, from a --hostfile's slots=N, caps the GPUs used (0: no cap).
	Slots int
	Line  int
}

type hostsFile struct {
	Defaults hostSettings
	Hosts    []hostEntry
	// SSHConfig is the file's `ssh_config:` as written ("" when not set),
	// and SSHConfigLine its line.
	SSHConfig     string
	SSHConfigLine int
	// Notify is the file's `notify:` (one target or a list), the runs'
	// --notify when they give none, and NotifyLine its line.
	Notify     []string
	NotifyLine int
}

var (
	settingKeys = []string{"user", "port", "identity_file", "jump", "workdir", "setup", "env"}
	entryKeys   = append([]string{"address", "name", "cluster_address", "gpus"}, settingKeys...)
	topKeys     = []string{"ssh_config", "notify", "defaults", "hosts"}
	envKeyRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	yamlLineRE  = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

// parseHostsFile decodes a hosts file strictly: every problem is reported as
// "FILE:LINE: what is wrong", which is why it walks yaml.Node itself instead
// of relying on KnownFields, whose messages name Go types.
func parseHostsFile(name string, data []byte) (*hostsFile, error) {
	fail := func(line int, format string, a ...any) error {
		return configErrorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := err.Error()
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			return nil, fail(n, "%s", m[2])
		}
		return nil, configErrorf("%s: %s", name, strings.TrimPrefix(msg, "yaml: "))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, configErrorf("%s: no hosts (the file is empty)", name).
			withHint("list hosts under `hosts:`; see hosts.example.yaml")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fail(root.Line, "expected a mapping with `defaults:` and `hosts:`")
	}
	hf := &hostsFile{}
	sawHosts := false
	err := eachKey(root, topKeys, fail, func(key string, v *yaml.Node) error {
		switch key {
		case "ssh_config":
			s, err := scalarString(v, key, fail)
			hf.SSHConfig, hf.SSHConfigLine = s, v.Line
			return err
		case "notify":
			var err error
			hf.Notify, err = parseNotify(v, fail)
			hf.NotifyLine = v.Line
			return err
		case "defaults":
			if v.Kind != yaml.MappingNode {
				return fail(v.Line, "defaults: expected a mapping")
			}
			return eachKey(v, settingKeys, fail, func(k string, val *yaml.Node) error {
				return setSetting(&hf.Defaults, k, val, fail)
			})
		case "hosts":
			sawHosts = true
			if v.Kind != yaml.SequenceNode {
				return fail(v.Line, "hosts: expected a list")
			}
			for _, item := range v.Content {
				e, err := parseHostEntry(item, fail)
				if err != nil {
					return err
				}
				if hf.Hosts, err = appendExpanded(hf.Hosts, e, name); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !sawHosts || len(hf.Hosts) == 0 {
		return nil, configErrorf("%s: no hosts (the `hosts:` list is missing or empty)", name).
			withHint("list hosts under `hosts:`; see hosts.example.yaml")
	}
	// Names are labels: two hosts of one name could not be told apart.
	named := map[string]int{}
	for _, e := range hf.Hosts {
		if e.Name == "" {
			continue
		}
		if first, dup := named[e.Name]; dup {
			return nil, fail(e.Line, "name %s is given twice (first on line %d)", e.Name, first)
		}
		named[e.Name] = e.Line
	}
	return hf, nil
}

type failFunc func(line int, format string, a ...any) error

// eachKey visits a mapping's keys in order, refusing unknown and repeated
// ones (yaml.v3 does not reject duplicates when decoding into a Node).
func eachKey(m *yaml.Node, known []string, fail failFunc, fn func(string, *yaml.Node) error) error {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return fail(k.Line, "expected a key")
		}
		if first, dup := seen[k.Value]; dup {
			return fail(k.Line, "%s is set twice (first on line %d)", k.Value, first)
		}
		seen[k.Value] = k.Line
		if !slices.Contains(known, k.Value) {
			return fail(k.Line, "unknown key %q (known: %s)", k.Value, strings.Join(known, ", "))
		}
		if err := fn(k.Value, v); err != nil {
			return err
		}
	}
	return nil
}

func parseHostEntry(n *yaml.Node, fail failFunc) (hostEntry, error) {
	e := hostEntry{Line: n.Line}
	switch n.Kind {
	case yaml.ScalarNode: // "- gpu01" shorthand
		e.Address = n.Value
	case yaml.MappingNode:
		err := eachKey(n, entryKeys, fail, func(k string, v *yaml.Node) error {
			switch k {
			case "address":
				s, err := scalarString(v, k, fail)
				e.Address = s
				return err
			case "name":
				s, err := scalarString(v, k, fail)
				if why := hostNameTooLong("name ", s); err == nil && why != "" {
					err = fail(v.Line, "%s", why)
				}
				if err == nil && !hostNameRE.MatchString(s) {
					err = fail(v.Line, "name %s is not a host name (letters, digits, ., _ and -)", quoted(s))
				}
				e.Name = s
				return err
			case "cluster_address":
				s, err := scalarString(v, k, fail)
				if why := hostNameTooLong("cluster_address ", s); err == nil && why != "" {
					err = fail(v.Line, "%s", why)
				}
				if err == nil && !hostNameRE.MatchString(s) && !isIP(s) {
					err = fail(v.Line, "cluster_address %s is not a host name or IP address", quoted(s))
				}
				e.ClusterAddress = s
				return err
			case "gpus":
				gpus, err := parseGPUList(v, fail)
				e.GPUs = gpus
				return err
			}
			return setSetting(&e.hostSettings, k, v, fail)
		})
		if err != nil {
			return e, err
		}
	default:
		return e, fail(n.Line, "expected a host (an address, or a mapping with `address:`)")
	}
	if e.Address == "" {
		return e, fail(n.Line, "host without `address:`")
	}
	return e, nil
}

func setSetting(s *hostSettings, key string, v *yaml.Node, fail failFunc) error {
	if key == "env" {
		if v.Kind != yaml.MappingNode {
			return fail(v.Line, "env: expected a mapping of NAME: value")
		}
		s.Env = map[string]string{}
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, val := v.Content[i], v.Content[i+1]
			if !envKeyRE.MatchString(k.Value) {
				return fail(k.Line, "env: %q is not a valid variable name", k.Value)
			}
			if _, dup := s.Env[k.Value]; dup {
				return fail(k.Line, "env: %s is set twice", k.Value)
			}
			if val.Kind != yaml.ScalarNode {
				return fail(val.Line, "env: %s: expected a string value", k.Value)
			}
			s.Env[k.Value] = val.Value
		}
		return nil
	}
	if key == "port" {
		if v.Kind != yaml.ScalarNode {
			return fail(v.Line, "port: expected a number")
		}
		p, err := parsePort(v.Value)
		if err != nil {
			return fail(v.Line, "port: %v", err)
		}
		s.Port = &p
		return nil
	}
	str, err := scalarString(v, key, fail)
	if err != nil {
		return err
	}
	switch key {
	case "user":
		if len(str) > maxUserLen || !userRE.MatchString(str) {
			return fail(v.Line, "user: bad user name %s", quoted(str))
		}
		s.User = &str
	case "identity_file":
		s.IdentityFile = &str
	case "jump":
		s.Jump = &str
	case "workdir":
		s.Workdir = &str
	case "setup":
		s.Setup = &str
	}
	return nil
}

func scalarString(v *yaml.Node, key string, fail failFunc) (string, error) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" || strings.TrimSpace(v.Value) == "" {
		return "", fail(v.Line, "%s: expected a non-empty value", key)
	}
	return v.Value, nil
}

// parseNotify is `notify:`: one target or a list of them, each checked
// by the run (launcher/notify) with the file's line.
func parseNotify(v *yaml.Node, fail failFunc) ([]string, error) {
	if v.Kind == yaml.ScalarNode {
		s, err := scalarString(v, "notify", fail)
		return []string{s}, err
	}
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		return nil, fail(v.Line, "notify: expected a target (a command, or an https:// URL) or a list of them")
	}
	var out []string
	for _, item := range v.Content {
		s, err := scalarString(item, "notify", fail)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func parseGPUList(v *yaml.Node, fail failFunc) ([]int, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, fail(v.Line, "gpus: expected a list of GPU indices like [0, 1]")
	}
	gpus := []int{}
	seen := map[int]bool{}
	for _, item := range v.Content {
		i, err := strconv.Atoi(item.Value)
		if item.Kind != yaml.ScalarNode || err != nil || i < 0 {
			return nil, fail(item.Line, "gpus: %q is not a GPU index", item.Value)
		}
		if seen[i] {
			return nil, fail(item.Line, "gpus: GPU %d listed twice", i)
		}
		seen[i] = true
		gpus = append(gpus, i)
	}
	sort.Ints(gpus)
	return gpus, nil
}

// appendExpanded appends e, one entry per host when its address is a host
// range (gpu[01-08]); a range's hosts share the entry's settings.
func appendExpanded(hosts []hostEntry, e hostEntry, file string) ([]hostEntry, error) {
	where := fmt.Sprintf("%s:%d", file, e.Line)
	addrs, err := expandRanges(e.Address)
	if err != nil {
		return nil, prefixed(where, err)
	}
	if len(addrs) > 1 && (e.Name != "" || e.ClusterAddress != "") {
		return nil, configErrorf("%s: address %s is a host range: it cannot have one name: or cluster_address:", where, shown(e.Address))
	}
	if len(hosts)+len(addrs) > maxExpandedHosts {
		return nil, configErrorf("%s: more than %d hosts", where, maxExpandedHosts)
	}
	for _, a := range addrs {
		e.Address = a
		hosts = append(hosts, e)
	}
	return hosts, nil
}
