package schedule

import (
	"fmt"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Code is the tree `--sync DIR` makes present on every host a run uses:
// its content hash, which names its directory on each host, and its size.
type Code struct {
	Hash string `json:"hash"`
	// Bytes is the size of its archive: what one transfer sends.
	Bytes int64 `json:"bytes"`
	// Files counts its regular files and symbolic links.
	Files int `json:"files"`
}

// PlanCode is a plan's "code": the tree, and where it is on each host the
// plan uses.
type PlanCode struct {
	Code
	Hosts []CodeHost `json:"hosts"`
}

// CodeHost is the tree's directory on one host.
type CodeHost struct {
	Host string `json:"host"`
	Dir  string `json:"dir"`
	// Present: the host had it when probed, so nothing is sent there.
	Present bool `json:"present"`
}

// Dir is the tree's directory on host, "" when the plan has none there.
func (c *PlanCode) Dir(host string) string {
	if c == nil {
		return ""
	}
	for _, h := range c.Hosts {
		if h.Host == host {
			return h.Dir
		}
	}
	return ""
}

// codeEnv names the tree's directory in every task's environment: scripts
// find it there, and `tfhive gc` knows a directory is in use when a
// process of the user carries it.
const codeEnv = "TFHIVE_CODE_DIR"

// withCode records the tree's directory on each host the plan uses, which
// the probe reported, and puts it in the tasks' environment.
func withCode(p *Plan, inv inventory.Inventory, code *Code) error {
	if code == nil {
		return nil
	}
	p.Code = &PlanCode{Code: *code, Hosts: []CodeHost{}}
	for _, name := range p.Hosts() {
		for i := range inv.Hosts {
			h := &inv.Hosts[i]
			if h.Name != name {
				continue
			}
			if h.CodeDir == "" {
				return fmt.Errorf("%s did not say where its code cache is", name)
			}
			p.Code.Hosts = append(p.Code.Hosts, CodeHost{Host: name, Dir: h.CodeDir, Present: h.CodePresent})
		}
	}
	for i := range p.Tasks {
		p.Tasks[i].Env[codeEnv] = p.Code.Dir(p.Tasks[i].Host)
	}
	return nil
}
