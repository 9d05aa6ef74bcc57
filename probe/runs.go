package probe

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
)

// markRuns starts what the user's kept run directories say
// (scripts/runs.sh), for `tfhive ps`.
const markRuns = "@@tfhive-runs"

// runsRoot is where runs.sh's paths start: the run directories are
// runsRoot/runs-KEY/RUN, relative to the home directory, KEY naming the
// machine (launcher/supervisor/scripts/rundir.sh).
const runsRoot = ".tfhive"

// runsPrefix starts the name of a machine's directory of runs.
const runsPrefix = "runs-"

// cutRuns takes runs.sh's section off the end of the holders' section,
// where the script prints it.
func cutRuns(holders []byte) (rest, runs []byte) {
	i := bytes.LastIndex(holders, []byte("\n"+markRuns+"\n"))
	if i < 0 {
		return holders, nil
	}
	return holders[:i], holders[i+len(markRuns)+2:]
}

// parseRuns reads runs.sh's section into the tasks of the user's kept
// runs; locks is the claims section's /proc/locks, where a session's
// feeder holds its lock on a task's control FIFO. What the script prints
// is checked again here: a file counts only under directories it said
// passed (.tfhive, .tfhive/runs, the run's), and only with a run id and
// a task name tfhive would have made. nil: the host did not look.
func parseRuns(section, locks []byte) *inventory.KeptRuns {
	locked := map[fileID]bool{}
	sc := bufio.NewScanner(bytes.NewReader(locks))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 {
			if id, ok := parseLockID(f[0]); ok {
				locked[id] = true
			}
		}
	}
	var kept *inventory.KeptRuns
	dirs := map[string]bool{}
	tasks := map[[2]string]*inventory.KeptTask{}
	var order [][2]string
	sc = bufio.NewScanner(bytes.NewReader(section))
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		switch kind {
		case "u":
			if uid, err := strconv.Atoi(f[0]); err == nil && uid >= 0 && kept == nil {
				kept = &inventory.KeptRuns{UID: uid}
			}
			continue
		case "d":
			dirs[f[0]] = true
			continue
		case "n":
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil && kept != nil {
				kept.Now = n
			}
			continue
		}
		runs, run, task, ext, ok := keptFile(f[0])
		if !ok || kept == nil || !dirs[runsRoot] || !dirs[runsRoot+"/"+runs] || !dirs[runsRoot+"/"+runs+"/"+run] {
			continue
		}
		key := [2]string{run, task}
		t := tasks[key]
		if t == nil {
			t = &inventory.KeptTask{RunID: run, Task: task}
			tasks[key] = t
			order = append(order, key)
		}
		switch {
		case kind == "p" && ext == "ctl" && len(f) == 4:
			dev, err1 := strconv.ParseUint(f[1], 10, 64)
			ino, err2 := strconv.ParseUint(f[2], 10, 64)
			if err1 == nil && err2 == nil {
				t.Followed = locked[fileID{unix.Major(dev), unix.Minor(dev), ino}]
			}
			t.Fresh = f[3] == "+"
		case kind == "f" && ext == "pid":
			// "SUP" while the task waits for go; "SUP LOGGER LOGGER" once
			// it started.
			t.Started = len(f) == 4 && allDigits(f[1:]...)
		case kind == "f" && ext == "rc":
			// Blank until the task ended, then "RC" or "RC truncated".
			t.Ended = len(f) >= 2 && allDigits(f[1])
		case kind == "f" && ext == "idle":
			// Empty while busy, else when the idle stretch began (the
			// supervisor's idle watch).
			if len(f) == 2 && allDigits(f[1]) {
				t.IdleSince, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	if kept != nil {
		for _, key := range order {
			kept.Tasks = append(kept.Tasks, *tasks[key])
		}
	}
	return kept
}

// keptFile splits .tfhive/runs-KEY/RUN/ROLE-INDEX.EXT into the machine's
// directory of runs (runs-KEY), its run id, task (ROLE:INDEX) and EXT.
func keptFile(path string) (runs, run, task, ext string, ok bool) {
	parts := strings.Split(path, "/")
	if len(parts) != 4 || parts[0] != runsRoot || !strings.HasPrefix(parts[1], runsPrefix) ||
		len(parts[1]) == len(runsPrefix) || !claim.ValidRunID(parts[2]) {
		return "", "", "", "", false
	}
	base, ext, ok := strings.Cut(parts[3], ".")
	i := strings.LastIndexByte(base, '-')
	if !ok || i <= 0 || !allDigits(base[i+1:]) || !lowerWord(base[:i]) {
		return "", "", "", "", false
	}
	return parts[1], parts[2], base[:i] + ":" + base[i+1:], ext, true
}

func allDigits(ss ...string) bool {
	for _, s := range ss {
		if s == "" || strings.Trim(s, "0123456789") != "" {
			return false
		}
	}
	return true
}

// lowerWord: a role name as tfhive makes them (ps, worker, chief, …).
func lowerWord(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz_") == ""
}
