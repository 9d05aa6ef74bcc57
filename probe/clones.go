package probe

import (
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// warnClones says once, naming them, which hosts report one machine id
// from process tables of their own: clones of one image (VMs cloned
// without a new id, containers of one image). tfhive keeps them apart
// (their claims and run directories are keyed by the process table too),
// so it is only a warning; but other software keyed by the machine id
// (journald, DHCP client ids) may not, and the user may not know. Hosts
// that share the process table too are one machine under two names,
// which planning refuses.
func (f *Fleet) warnClones(inv inventory.Inventory) {
	if !f.opts.Clones || f.opts.SSH.Warn == nil {
		return
	}
	type seen struct {
		names  []string
		tables map[string]bool
	}
	byID := map[string]*seen{}
	var order []string
	for _, h := range inv.Hosts {
		if !h.Reachable() || h.MachineID == "" || h.MachineID == "-" {
			continue
		}
		s := byID[h.MachineID]
		if s == nil {
			s = &seen{tables: map[string]bool{}}
			byID[h.MachineID] = s
			order = append(order, h.MachineID)
		}
		s.names = append(s.names, h.Name)
		s.tables[h.ProcessTable] = true
	}
	for _, id := range order {
		s := byID[id]
		if len(s.tables) < 2 {
			continue
		}
		msg := strings.Join(s.names, ", ") + " report one machine id (" + id + "): clones of one image? " +
			"tfhive keeps them apart by boot and process table; give each its own (systemd-machine-id-setup)"
		if f.warnOnce(msg) {
			f.opts.SSH.Warn(msg)
		}
	}
}
