// Package supervisor is the wire protocol between tfhive and the hosts:
// the shell scripts a task's supervisor, a host's multiplexer and its GPU
// sampler run there (scripts/, embedded), the stages that feed them
// (Input, AttachInput, MuxInput, SampleInput, behind the one Command line),
// the control lines tfhive writes to a supervisor, and the markers and
// records it reads back off their streams (claim lines, stream and
// truncation markers, attempt records, preemption lines, the
// multiplexer's frames). Its one job is to say and read these bytes.
//
// It decides nothing (launcher/lifecycle does) and opens no connection
// (the engine, launcher, runs these stages over probe/remote): it must
// not import either, nor os, os/exec, net or SSH.
package supervisor
