package slurmrun

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/launcher/record"
)

// RemoteDir is run id's directory on the login node, under its $HOME
// there: the batch script, the job's output, the tasks' ends. Every
// path tfhive writes there is made from it and the job's id, never read
// from a record.
func RemoteDir(runID string) string { return "tfhive-slurm/" + runID }

var (
	jobIDRE = regexp.MustCompile(`^[0-9]{1,20}$`)
	roleRE  = regexp.MustCompile(`^[a-z]{1,32}$`)
)

// maxRecordTasks bounds the tasks a record may name.
const maxRecordTasks = 1 << 14

// CheckJob says why j (read from a run's slurm.json) does not describe
// run id's job as Submit made it, or nil: a job id of digits, a login
// node's name, the run's own directory and output file (under
// RemoteDir), tasks whose ids and roles make plain file names.
func CheckJob(j record.SlurmJob, runID string) error {
	switch {
	case !jobIDRE.MatchString(j.JobID):
		return fmt.Errorf("its job id %q is not a Slurm job id", cut(j.JobID, 40))
	case j.Login == "" || len(j.Login) > 255 || strings.ContainsFunc(j.Login, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("its login node %q is not a host's name", cut(j.Login, 40))
	case !strings.HasSuffix(j.Dir, "/"+RemoteDir(runID)) || strings.ContainsAny(j.Dir, "\n\x00"):
		return fmt.Errorf("its directory %q is not run %s's (…/%s)", cut(j.Dir, 200), runID, RemoteDir(runID))
	case j.Output != j.Dir+"/job-"+j.JobID+".out":
		return fmt.Errorf("its output %q is not job %s's file in %s", cut(j.Output, 200), j.JobID, cut(j.Dir, 200))
	case j.Array < 0 || j.Array > maxRecordTasks:
		return fmt.Errorf("its array of %d tasks is out of bounds", j.Array)
	case len(j.Tasks) > maxRecordTasks:
		return fmt.Errorf("it names %d tasks", len(j.Tasks))
	}
	for _, t := range j.Tasks {
		if !roleRE.MatchString(t.Role) || t.Index < 0 || t.Index >= maxRecordTasks || t.ID != t.Role+":"+strconv.Itoa(t.Index) {
			return fmt.Errorf("its task %q (%q %d) is not a task's id", cut(t.ID, 40), cut(t.Role, 40), t.Index)
		}
	}
	return nil
}
