// Package notify tells people how a run goes: --notify TARGET (and the
// hosts file's `notify:`) names where; an Event is what (a run's end, or
// a row of its timeline that deserves a person's attention); a Notifier
// sends each event to every target, in parallel, each bounded by a
// timeout, and says what failed as a warning: a notification never
// decides a run's exit code.
//
// A target is a webhook (https://, or http:// for a lab's own
// Mattermost), sent a JSON body with a `text` field, which Slack and
// Mattermost show, and the event's fields beside it; or a local command,
// run by sh with the event in its environment (TFHIVE_EVENT, …) and as
// the same JSON on its stdin. A webhook's URL usually is its secret: it
// is shown and recorded only as scheme://host/… (Target.String,
// RedactArgs), and errors are stripped of it.
//
// It reads no environment and imports nothing of the engine: its callers
// (launcher/commands) give it the run's id, user and log dir.
package notify
