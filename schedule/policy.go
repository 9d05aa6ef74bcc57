package schedule

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Priorities (--priority).
const (
	PriorityLow    = "low"
	PriorityNormal = "normal"
	PriorityHigh   = "high"
)

// PriorityRank orders priorities: high first.
func PriorityRank(p string) int {
	switch p {
	case PriorityHigh:
		return 0
	case PriorityLow:
		return 2
	}
	return 1
}

// applyPolicy takes out, host by host, the free GPUs its policy refuses
// to this request (state Refused, the rule and host as reason): all of
// them when it may not use --priority high there, the reserved ones in
// their hours unless it is of their group, and those beyond a per-user
// or per-group limit, counting the GPUs held there already. The policy,
// who we are and the host's clock are inventory data: this stays pure.
func applyPolicy(inv inventory.Inventory, st [][]GPUStatus, req *Request) {
	for i := range inv.Hosts {
		h := &inv.Hosts[i]
		p, ctx := h.Policy, h.PolicyContext
		if p == nil || ctx == nil || st[i] == nil {
			continue
		}
		refuse := func(j int, why string) {
			if st[i][j].State == Free {
				st[i][j] = GPUStatus{Index: st[i][j].Index, State: Refused, Reason: "policy of " + h.Name + ": " + why}
			}
		}
		if req.Priority == PriorityHigh && p.High != nil && !ctx.In(p.High.Users, p.High.Groups) {
			for j := range st[i] {
				refuse(j, "--priority high is only for "+who(p.High))
			}
			continue
		}
		for _, r := range p.Reserved {
			if !r.Active(ctx.Weekday, ctx.Minute) || slices.Contains(ctx.Groups, r.Group) {
				continue
			}
			for j := range st[i] {
				// A GPU in MIG mode is reserved with its instances.
				gpu := st[i][j].Index
				if m := h.GPUs[j].MIGInstance; m != nil && slices.Contains(r.GPUs, m.Parent) {
					gpu = m.Parent
				}
				if slices.Contains(r.GPUs, gpu) {
					refuse(j, fmt.Sprintf("GPU %d is reserved for group %s (%s%s, host time)", gpu, r.Group, days(r.Days), r.Hours))
				}
			}
		}
		// The tightest limit that applies, with GPUs left under it.
		room, rule := -1, ""
		limit := func(n, held int, what string) {
			if left := max(n-held, 0); room < 0 || left < room {
				room, rule = left, fmt.Sprintf("%s may hold %d GPUs at once (%d held)", what, n, held)
			}
		}
		if n, ok := p.Limits.Users[ctx.User]; ok {
			limit(n, held(h, func(u string) bool { return u == ctx.User }), "user "+ctx.User)
		} else if n, ok := p.Limits.Users["*"]; ok {
			limit(n, held(h, func(u string) bool { return u == ctx.User }), "each user")
		}
		for _, g := range slices.Sorted(mapKeys(p.Limits.Groups)) {
			if !slices.Contains(ctx.Groups, g) {
				continue
			}
			limit(p.Limits.Groups[g], held(h, func(u string) bool { return u == ctx.User || slices.Contains(ctx.Members[g], u) }), "group "+g)
		}
		if room < 0 {
			continue
		}
		for j := range st[i] {
			if st[i][j].State != Free {
				continue
			}
			if room > 0 {
				room--
				continue
			}
			refuse(j, rule)
		}
	}
}

// mayUseHigh says whether user may use --priority high on h: its policy
// names the user, or a group the host lists the user in (getent's
// members: a group that is only the user's primary one does not count).
func mayUseHigh(h *inventory.HostInventory, user string) bool {
	p, ctx := h.Policy, h.PolicyContext
	if p == nil || p.High == nil || slices.Contains(p.High.Users, user) {
		return true
	}
	if ctx == nil {
		return true // as applyPolicy: no context, no rule applied
	}
	if user == ctx.User {
		return ctx.In(p.High.Users, p.High.Groups)
	}
	for _, g := range p.High.Groups {
		if slices.Contains(ctx.Members[g], user) {
			return true
		}
	}
	return false
}

// held counts the GPUs of h whose claims users matching mine hold.
func held(h *inventory.HostInventory, mine func(string) bool) int {
	n := 0
	for _, c := range h.Claims {
		if c.Kind == "gpu" && c.Blocked == "" && c.User != "" && mine(c.User) {
			n++
		}
	}
	return n
}

func who(w *inventory.PolicyWho) string {
	var parts []string
	if len(w.Users) > 0 {
		parts = append(parts, "users "+strings.Join(w.Users, ", "))
	}
	if len(w.Groups) > 0 {
		parts = append(parts, "groups "+strings.Join(w.Groups, ", "))
	}
	if len(parts) == 0 {
		return "nobody"
	}
	return strings.Join(parts, " and ")
}

func days(ds []string) string {
	if len(ds) == 0 {
		return ""
	}
	return strings.Join(ds, ",") + " "
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
