package record

// Idle GPUs (scripts/idle-watch.sh): a run stopped by its hosts because
// its GPUs sat idle.
const (
	// ExitIdleStopped is an idle-stopped run's code. main's exit-code
	// table names it.
	ExitIdleStopped = 6
	// ResultIdleStopped: a host's idle rule (its policy, or --idle-stop)
	// stopped one of the run's tasks.
	ResultIdleStopped = "idle-stopped"
	// EventIdleWarning: a task's GPUs have been idle for the rule's
	// warning; EventIdleStopped: for its stop.
	EventIdleWarning = "idle-warning"
	EventIdleStopped = "idle-stopped"
)
