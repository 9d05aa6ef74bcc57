package emit

import "github.com/tfhive/tfhive/launcher/record"

// SlurmTask is one task of a Slurm job as the script places it: what
// `tfhive run --on slurm` expects to hear of in the job's output.
type SlurmTask = record.SlurmTask

// SlurmJob checks o and renders its batch script as Write does for
// --emit slurm, with the tasks it places (a sweep's: one trial's), for
// run --on slurm: each task's end also goes to a file of its own in the
// directory sbatch ran in (fate-JOB-ID, see slurm-task.sh's tfhive_fate).
func SlurmJob(o Options) (string, []SlurmTask, error) {
	o.Target, o.fates = Slurm, true
	if err := o.check(); err != nil {
		return "", nil, err
	}
	text, err := slurmScript(&o)
	if err == nil {
		err = checkScript(text)
	}
	if err != nil {
		return "", nil, err
	}
	req := o.Request
	if o.Sweep != nil {
		req.Command = sweepCommand(o.Sweep, req.Command)
	}
	l, err := planSlurm(req, o.Nodes, o.GPUsPerNode)
	if err != nil {
		return "", nil, err
	}
	return text, slurmTasks(l), nil
}

func slurmTasks(l *slurmLayout) []SlurmTask {
	out := make([]SlurmTask, len(l.plan.Tasks))
	for i, t := range l.plan.Tasks {
		out[i] = SlurmTask{ID: t.ID, Role: t.Role, Index: t.Index, Node: l.node[i], GPUs: append([]int(nil), t.GPUs...)}
	}
	return out
}
