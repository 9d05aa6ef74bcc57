package commands

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
)

// MaxGrace is the longest --grace: a stopped run holds its GPUs for its
// grace, and a high run that preempts it waits that long. Slurm's
// KillWait allows more, but 30 minutes saves any checkpoint a training
// job writes; a longer one is a run that should save more often.
const MaxGrace = 30 * time.Minute

// stopSignals are the signals --stop-signal may name: those a training
// script traps to save itself (KILL and STOP cannot be trapped).
var stopSignals = []string{"TERM", "INT", "HUP", "QUIT", "USR1", "USR2"}

// stopSignal reads --stop-signal, SIGTERM or TERM alike, into the name
// the supervisor sends ("TERM").
func stopSignal(s string) (string, error) {
	if s == "" {
		return "TERM", nil
	}
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	if !slices.Contains(stopSignals, name) {
		return "", &UsageError{Msg: fmt.Sprintf("--stop-signal %q: not one of SIG%s", s, strings.Join(stopSignals, ", SIG"))}
	}
	return name, nil
}

// requeuePolicy checks --grace, --requeue and --requeue-on before any
// host is touched. A preempted run is requeued under --requeue, or under
// --wait unless --requeue=false (requeueSet says it was given);
// --requeue-on implies --requeue: a task that asks to go back to the
// queue means it.
func (o *RunOptions) requeuePolicy() (lifecycle.Requeue, error) {
	var rq lifecycle.Requeue
	if o.Grace > MaxGrace {
		return rq, usagef("--grace %s: at most %s", o.Grace, MaxGrace)
	}
	if o.RequeueOn != "" {
		var err error
		if rq.On, err = lifecycle.ParseRequeueOn(o.RequeueOn); err != nil {
			return rq, usagef("%s", err)
		}
		if o.RequeueSet && !o.Requeue {
			return rq, &UsageError{Msg: "--requeue-on asks for a requeue, --requeue=false refuses it", Fix: "drop one of them"}
		}
	}
	rq.Preempted = o.Requeue || (o.Wait > 0 && !o.RequeueSet) || len(rq.On) > 0
	return rq, nil
}
