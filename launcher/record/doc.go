// Package record is what a run leaves behind, as plain data: the summary
// (summary.json) with each task's result, attempts and GPU usage, the
// --sync report, and the description a kept run's hosts hold (run.json).
// Its one job is to name these records and their result, outcome and
// exit-code words, so that wait, attach, runs and main read a run without
// importing the engine that ran it.
//
// It must stay data: no I/O of its own (callers read and write the
// files), no clock, and no import of the engine (launcher), the host
// protocol (launcher/supervisor), os, net or SSH.
package record
