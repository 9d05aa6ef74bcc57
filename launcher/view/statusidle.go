package view

import "github.com/tfhive/tfhive/probe/inventory"

// idleNote is a claimed GPU's "idle 37m" in `tfhive status`, as ps and
// top show it: the run holding it has had every task on this host idle
// past the idle rule's warning (idle-watch.sh's NAME.idle, which the
// probe read from the user's own run directory: another user's run says
// nothing). "" otherwise, and for a file missing or malformed.
func idleNote(h *inventory.HostInventory, g inventory.GPU) string {
	if h.Kept == nil {
		return ""
	}
	var held *inventory.Claim
	for i := range h.Claims {
		if c := &h.Claims[i]; c.Kind == "gpu" && c.ID == g.Index && c.Blocked == "" {
			held = c
			break
		}
	}
	if held == nil || held.RunID == "" {
		return ""
	}
	// The run's tasks here: those its holders (of the same uid) name.
	var tasks []string
	for _, c := range h.Claims {
		if c.Blocked == "" && c.RunID == held.RunID && c.UID == held.UID && c.Task != "" {
			tasks = append(tasks, c.Task)
		}
	}
	d, ok := h.Kept.IdleFor(held.UID, held.RunID, tasks)
	if !ok {
		return ""
	}
	return "idle " + ShortDuration(d)
}

// withIdle adds a claimed GPU's idle note to its DETAIL.
func withIdle(h *inventory.HostInventory, g inventory.GPU, detail string) string {
	note := idleNote(h, g)
	switch {
	case note == "":
		return detail
	case detail == "":
		return note
	}
	return detail + "; " + note
}
