package slurmrun

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/launcher/record"
)

// Accounting is a job's end as Slurm recorded it.
type Accounting struct {
	JobID string
	// State is the job's state's first word ("CANCELLED by 1000" is
	// CANCELLED).
	State string
	// ExitCode is Slurm's "N:S": the batch script's status N, or the
	// signal S that ended it.
	ExitCode     string
	Code, Signal int
	// Cancelled: tfhive cancelled the job (kill, Ctrl-C: cancel.sh's
	// marker), whatever state its tasks' stop left it in.
	Cancelled bool
}

// ParseAccounting reads what follow.sh prints after its mark: sacct's
// lines (`sacct|JobID|State|ExitCode`, one per job and step) or
// scontrol's one (`scontrol|JobId=… JobState=… ExitCode=N:S …`). It
// returns job's own record; false when there is none.
func ParseAccounting(out []byte, job string) (Accounting, bool) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "sacct|"):
			f := strings.Split(strings.TrimPrefix(line, "sacct|"), "|")
			if len(f) == 3 && f[0] == job {
				return accounting(f[0], f[1], f[2]), true
			}
		case strings.HasPrefix(line, "scontrol|"):
			kv := map[string]string{}
			for _, w := range strings.Fields(strings.TrimPrefix(line, "scontrol|")) {
				if k, v, ok := strings.Cut(w, "="); ok {
					kv[k] = v
				}
			}
			if kv["JobId"] == job && kv["JobState"] != "" {
				return accounting(job, kv["JobState"], kv["ExitCode"]), true
			}
		}
	}
	return Accounting{}, false
}

// ParseArray reads a job array's records, by array index: sacct's
// "JOB_K" lines (not their steps'), or scontrol's lines, one per array
// task (ArrayJobId=JOB ArrayTaskId=K).
func ParseArray(out []byte, job string) map[int]Accounting {
	recs := map[int]Accounting{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "sacct|"):
			f := strings.Split(strings.TrimPrefix(line, "sacct|"), "|")
			if len(f) != 3 {
				continue
			}
			k, err := strconv.Atoi(strings.TrimPrefix(f[0], job+"_"))
			if err == nil && strings.HasPrefix(f[0], job+"_") {
				recs[k] = accounting(f[0], f[1], f[2])
			}
		case strings.HasPrefix(line, "scontrol|"):
			kv := map[string]string{}
			for _, w := range strings.Fields(strings.TrimPrefix(line, "scontrol|")) {
				if k, v, ok := strings.Cut(w, "="); ok {
					kv[k] = v
				}
			}
			k, err := strconv.Atoi(kv["ArrayTaskId"])
			if err == nil && kv["ArrayJobId"] == job && kv["JobState"] != "" {
				recs[k] = accounting(job+"_"+kv["ArrayTaskId"], kv["JobState"], kv["ExitCode"])
			}
		}
	}
	return recs
}

// CancelledTasks reads follow.sh's "cancelled|ID_K" lines, the tasks of
// job array job that had not ended when tfhive kill cancelled it
// (cancel.sh's marker): their indices.
func CancelledTasks(out []byte, job string) map[int]bool {
	ks := map[int]bool{}
	for line := range strings.Lines(string(out)) {
		id, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "cancelled|"+job+"_")
		if k, err := strconv.Atoi(id); ok && err == nil && k >= 0 {
			ks[k] = true
		}
	}
	return ks
}

func accounting(id, state, exit string) Accounting {
	a := Accounting{JobID: id, ExitCode: exit}
	if f := strings.Fields(state); len(f) > 0 {
		a.State = f[0]
	}
	n, s, _ := strings.Cut(exit, ":")
	a.Code, _ = strconv.Atoi(n)
	a.Signal, _ = strconv.Atoi(s)
	return a
}

// Ended is how a run --on slurm ended, for its summary.
type Ended struct {
	Result, Reason string
	ExitCode       int
}

// Outcome maps the job's record onto tfhive's results and exit codes, as
// an experienced Slurm user reads them:
//   - COMPLETED: succeeded, 0.
//   - FAILED: failed, with the batch script's status N (the deciding
//     task's: the script exits with it), or 128+S when a signal S ended
//     it; tfhive's own codes among them become 1 (record.TaskExitCode).
//   - CANCELLED: someone's scancel (tfhive kill, the admins): cancelled,
//     143; tfhive's own, on Ctrl-C or SIGTERM: interrupted, interrupt.
//   - TIMEOUT and DEADLINE: the job's time limit: timeout, 124.
//   - NODE_FAIL and BOOT_FAIL: a node was lost: failed, 4, as a lost host.
//   - PREEMPTED: preempted, 5.
//   - OUT_OF_MEMORY: failed, 1 (Slurm's 0:125 is no signal of the task's).
//
// interrupt is the code of tfhive's own stop (130 or 143), 0 when tfhive
// stopped nothing; a job that tfhive stopped ends interrupted whatever
// Slurm calls its end, as a run on hosts does.
func Outcome(a Accounting, found bool, interrupt int) Ended {
	if interrupt != 0 {
		return Ended{record.ResultInterrupted, fmt.Sprintf("interrupted: tfhive cancelled the job (scancel after --grace)%s", slurmSaid(a, found)), interrupt}
	}
	if !found {
		return Ended{record.ResultFailed, "Slurm has no record of the job's end (sacct, scontrol)", 1}
	}
	if a.Cancelled && (a.State == "COMPLETED" || a.State == "CANCELLED" || a.State == "FAILED") {
		return Ended{record.ResultCancelled, "cancelled: tfhive kill stopped the job (sacct: " + a.State + " " + a.ExitCode + ")", record.ExitCancelled}
	}
	switch a.State {
	case "COMPLETED":
		return Ended{record.ResultSucceeded, "the job completed (sacct: COMPLETED " + a.ExitCode + ")", 0}
	case "FAILED":
		code := a.Code
		switch {
		case a.Signal > 0 && a.Signal < 65:
			code = 128 + a.Signal
		case code == 0:
			code = 1
		}
		return Ended{record.ResultFailed, "the job failed (sacct: FAILED " + a.ExitCode + ")", record.TaskExitCode(code)}
	case "CANCELLED":
		return Ended{record.ResultCancelled, "cancelled: scancel stopped the job (sacct: CANCELLED)", record.ExitCancelled}
	case "TIMEOUT", "DEADLINE":
		return Ended{record.ResultTimeout, "timeout: the job reached its time limit (sacct: " + a.State + ")", record.ExitTimeout}
	case "NODE_FAIL", "BOOT_FAIL":
		return Ended{record.ResultFailed, "a node of the job was lost (sacct: " + a.State + ")", record.ExitHostLost}
	case "PREEMPTED":
		return Ended{record.ResultPreempted, "preempted: Slurm gave the job's nodes to another job (sacct: PREEMPTED)", record.ExitPreempted}
	case "OUT_OF_MEMORY":
		return Ended{record.ResultFailed, "the job ran out of memory (sacct: OUT_OF_MEMORY " + a.ExitCode + ")", 1}
	}
	return Ended{record.ResultFailed, "the job ended " + a.State + " (sacct: " + a.State + " " + a.ExitCode + ")", 1}
}

func slurmSaid(a Accounting, found bool) string {
	if !found {
		return ""
	}
	return " (sacct: " + a.State + " " + a.ExitCode + ")"
}
