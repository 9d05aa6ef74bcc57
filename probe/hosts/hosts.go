// Package hosts is tfhive's hosts configuration: where the fleet comes from
// (-H, a hosts file, ./hosts.yaml, else this machine), what each host
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
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/localfile"
)

// Options says where hosts come from. The first source that is set wins:
// Flags (-H), File (--hosts or $TFHIVE_HOSTS), DefaultFile; with none of
// them the fleet is this machine, run without SSH.
type Options struct {
	Flags []string
	File  string
	// DefaultFile is tried when Flags and File are empty (DefaultFile,
	// the constant, for the command line).
	DefaultFile string
	// SSHConfig is the ssh_config to honour; "" means ~/.ssh/config when it
	// exists.
	SSHConfig string
	// Home and LocalUser stand in for the environment (tests set them).
	Home      string
	LocalUser string
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
	cfg, err := loadSSHConfig(o)
	if err != nil {
		return nil, err
	}
	r := resolver{opts: o, cfg: cfg, defaults: defaultsFor(o)}

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
		name := cmp.Or(o.File, o.DefaultFile)
		data, err := localfile.Read(name, maxHostsFileSize)
		if err != nil {
			return nil, configErrorf("hosts file: %v", localfile.Describe(err))
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
		return []inventory.Host{Local()}, nil
	}
	if err := checkDuplicates(hosts); err != nil {
		return nil, err
	}
	return hosts, nil
}

// Local is the fleet when no hosts are given: this machine, reached
// without SSH through the same code paths.
func Local() inventory.Host {
	return inventory.Host{Name: "localhost", Address: "localhost", ClusterAddress: "localhost", Local: true, Source: "default"}
}

// checkDuplicates refuses a host given twice, by name or by where it
// resolves (an alias and its IP are one machine: the same GPUs would be
// handed out twice).
func checkDuplicates(hosts []inventory.Host) error {
	seen := map[string]inventory.Host{}
	for _, h := range hosts {
		name := h.Name
		if h.Port != DefaultPort {
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

func fileExists(name string) bool {
	if name == "" {
		return false
	}
	_, err := os.Stat(name)
	return err == nil
}
