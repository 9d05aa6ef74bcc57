package record

// The events of a run's events.csv (time,task,host,event,detail): the
// engine writes them as they happen, the report draws its timeline from
// them.
const (
	EventStart      = "start"
	EventAdopted    = "adopted"
	EventNotStarted = "not-started"
	EventAttemptEnd = "attempt-end"
	EventRestart    = "restart"
	EventStop       = "stop"
	EventKill       = "kill"
	EventAbort      = "abort"
	EventExit       = "exit"
	EventLost       = "lost"
	EventPreempted  = "preempted"
	EventLinkLost   = "link-lost"
	EventReconnect  = "reconnected"
	EventHostLost   = "host-lost"
	EventTimeout    = "timeout"
	EventInterrupt  = "interrupt"
	EventSteppedDn  = "stepped-down"
	EventTruncated  = "truncated"
	// EventRequeued: the run went back to the queue (lifecycle.Requeueable);
	// EventResumed: it started again, its tasks told to resume.
	EventRequeued = "requeued"
	EventResumed  = "resumed"
)

// EventHang: no task printed anything for --hang-after; every task's
// stacks were taken (launcher/hang.go). Its detail says for how long and
// where the stacks are.
const EventHang = "hang"
