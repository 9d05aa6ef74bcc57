package schedule

import "github.com/tfhive/tfhive/probe/inventory"

// checkSameMachine refuses a fleet that names one machine twice (a second
// DNS name, another of its addresses): planning it would book its GPUs and
// ports twice, and its own claims would then conflict with each other. A
// machine is known by what it reports, not by its name: a GPU UUID, or its
// machine id together with its process table and claims directory. Hosts
// that share a machine id but not a process table are clones of one image
// (VMs cloned without a new id, containers), separate machines; hosts that
// keep claims apart share nothing tfhive books.
func checkSameMachine(inv inventory.Inventory) error {
	seen := map[string]string{}
	for _, h := range inv.Hosts {
		if !h.Reachable() {
			continue
		}
		// Each key says what the two names share, for the message.
		var keys []string
		for _, g := range h.GPUs {
			if g.UUID != "" {
				keys = append(keys, "GPU "+g.UUID)
			}
		}
		if h.MachineID != "" && h.MachineID != "-" {
			keys = append(keys, "machine id "+h.MachineID+", process table "+h.ProcessTable+" and claims in "+h.ClaimsDir)
		}
		for _, k := range keys {
			if other, ok := seen[k]; ok && other != h.Name {
				return usageErr("list each machine once: drop one of the two names from the hosts",
					"%s and %s are the same machine (both report %s)", other, h.Name, k)
			}
		}
		for _, k := range keys {
			seen[k] = h.Name
		}
	}
	return nil
}
