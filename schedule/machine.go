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
	// The host that reported each: by GPU UUID, and by machine id,
	// process table and claims directory, as the message words it. The
	// UUIDs are keys as they are, not words: a plan makes this check on
	// every GPU of the fleet, and only a refusal needs the words.
	n := 0
	for i := range inv.Hosts {
		n += len(inv.Hosts[i].GPUs)
	}
	gpus, machines := make(map[string]string, n), map[string]string{}
	for i := range inv.Hosts {
		h := &inv.Hosts[i]
		if !h.Reachable() {
			continue
		}
		for _, g := range h.GPUs {
			if g.UUID == "" {
				continue
			}
			if other, ok := gpus[g.UUID]; ok && other != h.Name {
				return sameMachine(other, h.Name, "GPU "+g.UUID)
			}
			gpus[g.UUID] = h.Name
		}
		if h.MachineID != "" && h.MachineID != "-" {
			k := "machine id " + h.MachineID + ", process table " + h.ProcessTable + " and claims in " + h.ClaimsDir
			if other, ok := machines[k]; ok && other != h.Name {
				return sameMachine(other, h.Name, k)
			}
			machines[k] = h.Name
		}
	}
	return nil
}

func sameMachine(one, other, what string) error {
	return usageErr("list each machine once: drop one of the two names from the hosts",
		"%s and %s are the same machine (both report %s)", one, other, what)
}
