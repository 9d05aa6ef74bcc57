// Package top is `tfhive top`'s screen: what one refresh saw of the fleet
// (Snapshot: every host's GPUs and who holds each, the queue, the user's
// runs), laid out in a terminal of any size (render.go: every line cut to
// the width, the sections shrunk to the height, never wrapped), and the
// Bubble Tea model that refreshes it, follows a run's log and stops a run
// on the user's keys (model.go). A refresh over the caller's probe
// (source.go), the user's runs of a snapshot from what the hosts hold and
// the log root's records (gather.go), and a log's tail (tail.go) are
// made here; probing the fleet and stopping a run over its connections
// are launcher/commands'. The model is given
// all of them as functions (Config), so that its Update and View are
// tested on plain values, without hosts, files or a terminal.
package top
