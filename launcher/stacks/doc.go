// Package stacks takes a run's tasks' stacks on its hosts (scripts/
// stacks.sh: py-spy where the host has it, else what /proc and gdb
// give), each host over its existing connection and all in parallel,
// and writes them into the run's log dir (stacks/ROLE-INDEX.txt). The
// engine calls it when a run goes silent for --hang-after
// (launcher/hang.go), `tfhive stacks RUN` on demand.
package stacks
