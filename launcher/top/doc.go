// Package top is `tfhive top`'s screen: what one refresh saw of the fleet
// (Snapshot: every host's GPUs and who holds each, the queue, the user's
// runs), laid out in a terminal of any size (render.go: every line cut to
// the width, the sections shrunk to the height, never wrapped), and the
// Bubble Tea model that refreshes it, follows a run's log and stops a run
// on the user's keys (model.go). Gathering a snapshot, reading a log and
// stopping a run are the caller's functions (launcher/commands), so that
// the model's Update and View are tested on plain values, without hosts,
// files or a terminal.
package top
