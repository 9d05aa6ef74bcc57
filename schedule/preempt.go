package schedule

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Victim is a low run a high run asks to preempt, with the hosts where it
// holds GPUs and whose policy allows preempt_low: the request goes to
// each of them.
type Victim struct {
	RunID, User string
	Hosts       []string
	GPUs        int
}

// Preemptions is the fewest low runs whose GPUs, once freed, would let a
// --priority high request be placed: none when it is not high, when it
// fits already, or when freeing every preemptible run would not do.
// Candidates are the runs whose holders' label says low, on hosts whose
// policy allows preempt_low; the smallest are tried first (the least work
// lost), added one at a time until the request fits, then each is left
// out again if the rest still suffice.
func Preemptions(inv inventory.Inventory, req Request) []Victim {
	if req.Priority != PriorityHigh {
		return nil
	}
	type key struct{ user, run string }
	byRun := map[key]*Victim{}
	for _, h := range inv.Hosts {
		if !h.Reachable() || h.Policy == nil || !h.Policy.PreemptLow {
			continue
		}
		for _, c := range h.Claims {
			if c.Kind != "gpu" || c.Priority != PriorityLow || c.RunID == "" || c.User == "" || c.Blocked != "" {
				continue
			}
			k := key{c.User, c.RunID}
			v := byRun[k]
			if v == nil {
				v = &Victim{RunID: c.RunID, User: c.User}
				byRun[k] = v
			}
			if !slices.Contains(v.Hosts, h.Name) {
				v.Hosts = append(v.Hosts, h.Name)
			}
			v.GPUs++
		}
	}
	if len(byRun) == 0 {
		return nil
	}
	cands := make([]Victim, 0, len(byRun))
	for _, v := range byRun {
		cands = append(cands, *v)
	}
	slices.SortFunc(cands, func(a, b Victim) int {
		return cmp.Or(cmp.Compare(a.GPUs, b.GPUs), strings.Compare(a.RunID, b.RunID), strings.Compare(a.User, b.User))
	})
	fits := func(vs []Victim) bool {
		_, err := Make(without(inv, vs), req)
		return err == nil
	}
	if fits(nil) {
		return nil
	}
	var chosen []Victim
	ok := false
	for _, v := range cands {
		chosen = append(chosen, v)
		if ok = fits(chosen); ok {
			break
		}
	}
	if !ok {
		return nil
	}
	for i := len(chosen) - 1; i >= 0; i-- {
		rest := slices.Delete(slices.Clone(chosen), i, i+1)
		if fits(rest) {
			chosen = rest
		}
	}
	return chosen
}

// without is inv as it would be once the victims' tasks ended on the
// hosts where they are preempted (Without).
func without(inv inventory.Inventory, vs []Victim) inventory.Inventory {
	return Without(inv, func(h *inventory.HostInventory, c inventory.Claim) bool {
		return slices.ContainsFunc(vs, func(v Victim) bool {
			return v.RunID == c.RunID && v.User == c.User && slices.Contains(v.Hosts, h.Name)
		})
	})
}

// Without is inv as it would be once the runs whose claims gone says are
// gone ended: those claims taken out, and on their GPUs the processes
// (but intruders, which are no run's) and the load with them. inv is not
// changed.
func Without(inv inventory.Inventory, gone func(h *inventory.HostInventory, c inventory.Claim) bool) inventory.Inventory {
	out := inv
	out.Hosts = slices.Clone(inv.Hosts)
	for i := range out.Hosts {
		h := &out.Hosts[i]
		var freed []int
		var claims []inventory.Claim
		for _, c := range h.Claims {
			if gone(h, c) {
				if c.Kind == "gpu" {
					freed = append(freed, c.ID)
				}
				continue
			}
			claims = append(claims, c)
		}
		if len(freed) == 0 {
			if len(claims) < len(h.Claims) {
				h.Claims = claims
			}
			continue
		}
		h.Claims = claims
		h.GPUs = slices.Clone(h.GPUs)
		for j := range h.GPUs {
			g := &h.GPUs[j]
			if !slices.Contains(freed, g.Index) {
				continue
			}
			var in []inventory.Process
			for _, p := range g.Processes {
				if p.Intruder {
					in = append(in, p)
				}
			}
			g.Processes, g.UtilizationPct, g.MemoryUsedMiB = in, nil, nil
		}
	}
	return out
}

// PreemptibleBy says, for a run of priority prio, who may preempt it on
// each host: only a low run, only where the policy allows preempt_low;
// "*" when the policy lets anyone use --priority high, else the users
// ("u:NAME") and groups ("g:NAME") it names (a name that is not a plain
// word is left out: the host's shell reads these as words); then "n:GPUS",
// the host's GPUs (scripts/preempt-watch.sh stops the run only for a high
// run that asks more GPUs than are free there).
func PreemptibleBy(inv inventory.Inventory, prio string) map[string]string {
	if prio != PriorityLow {
		return nil
	}
	out := map[string]string{}
	for _, h := range inv.Hosts {
		p := h.Policy
		if p == nil || !p.PreemptLow {
			continue
		}
		// The host's GPUs, for the watch to see whether a high run that
		// asks really needs this run's: more than are free.
		n := fmt.Sprintf(" n:%d", len(h.GPUs))
		if p.High == nil {
			out[h.Name] = "*" + n
			continue
		}
		var ws []string
		for _, u := range p.High.Users {
			if plainName.MatchString(u) {
				ws = append(ws, "u:"+u)
			}
		}
		for _, g := range p.High.Groups {
			if plainName.MatchString(g) {
				ws = append(ws, "g:"+g)
			}
		}
		if len(ws) > 0 {
			out[h.Name] = strings.Join(ws, " ") + n
		}
	}
	return out
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)
