package emit

import (
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/schedule"
)

var (
	//go:embed scripts/slurm-task.sh
	slurmTask string
	//go:embed scripts/slurm-batch.sh
	slurmBatch string
)

// maxTaskProgram bounds the functions every task gets on srun's command
// line (bash -c): Linux takes at most 128 KiB in one argument.
const maxTaskProgram = 120 << 10

// slurmScript renders the sbatch script.
func slurmScript(o *Options) (string, error) {
	req := o.Request
	if o.Sweep != nil {
		req.Command = sweepCommand(o.Sweep, req.Command)
	}
	l, err := planSlurm(req, o.Nodes, o.GPUsPerNode)
	if err != nil {
		return "", err
	}
	env, _ := parseEnv(o.Env)
	p := l.plan
	var b strings.Builder
	b.WriteString("#!/bin/bash -l\n")
	if o.Sweep != nil {
		// Each trial is a run of its own: its id is the array task's.
		for i := range p.Tasks {
			p.Tasks[i].Env["TFHIVE_RUN_ID"] = paramMarker(trialVar)
		}
		fmt.Fprintf(&b, "# tfhive sweep %s for Slurm, a job array of one task per trial, each the job\n", p.RunID)
		fmt.Fprintf(&b, "# `tfhive plan --emit slurm` planned: %s.\n", summary(p))
	} else {
		fmt.Fprintf(&b, "# tfhive run %s for Slurm, as `tfhive plan --emit slurm` planned it: %s.\n", p.RunID, summary(p))
	}
	b.WriteString("# Submit it with `sbatch FILE`; sbatch's own options (--partition,\n")
	b.WriteString("# --cpus-per-task, --mem, …) win over the #SBATCH lines below.\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", p.RunID)
	if o.Sweep != nil {
		b.WriteString(arrayLine(o))
	}
	fmt.Fprintf(&b, "#SBATCH --nodes=%d\n", l.nodes)
	fmt.Fprintf(&b, "#SBATCH --ntasks-per-node=%d\n", l.tasksPerNode)
	if l.gpusPerNode > 0 {
		fmt.Fprintf(&b, "#SBATCH --gpus-per-node=%d\n", l.gpusPerNode)
	}
	if o.Timeout > 0 {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", slurmTime(o.Timeout))
	}
	if o.LogDir != "" {
		name := "%x-%j.out"
		if o.Sweep != nil {
			name = "%x-%A_%a.out" // the array's job id, the task's index
		}
		fmt.Fprintf(&b, "#SBATCH --output=%s/%s\n", strings.TrimSuffix(o.LogDir, "/"), name)
	}
	export := "NONE"
	if s := o.secrets(); len(s) > 0 {
		export = strings.Join(s, ",")
	}
	fmt.Fprintf(&b, "#SBATCH --export=%s\n", export)
	b.WriteString("#\n# Where the tasks run, the nodes numbered as\n")
	b.WriteString("# `scontrol show hostnames \"$SLURM_JOB_NODELIST\"` lists them:\n")
	for n := range l.nodes {
		var on []string
		for i, t := range p.Tasks {
			if l.node[i] == n {
				on = append(on, taskNote(&t))
			}
		}
		fmt.Fprintf(&b, "#   node %d: %s\n", n, strings.Join(on, ", "))
	}

	train, serve := steps(p)
	b.WriteString("\n# shellcheck disable=SC2317 # functions reach the tasks through declare -f\n")
	if o.Sweep != nil {
		b.WriteString(trialCase(o))
		b.WriteString("tfhive_run_id=$" + trialVar + "\n")
	} else {
		b.WriteString("tfhive_run_id=" + p.RunID + "\n")
	}
	fmt.Fprintf(&b, "tfhive_grace=%d # seconds between SIGTERM and SIGKILL when stopping tasks (--grace)\n", seconds(o.Grace))
	fmt.Fprintf(&b, "tfhive_secrets=(%s) # --env K without a value: exported by sbatch, never written here\n", strings.Join(o.secrets(), " "))
	fmt.Fprintf(&b, "tfhive_train_nodes=(%s) # the node of each task of the train step, by rank\n", nodeList(l, train))
	fmt.Fprintf(&b, "tfhive_serve_nodes=(%s) # the node of each task of the serve step, by rank\n", nodeList(l, serve))

	layout := layoutFunc(o, l, env, train, serve)
	if o.Setup != "" {
		layout += "\n# --setup, run by each task's shell before its command.\ntfhive_setup() {\n" + o.Setup + "\n}\n"
	}
	if n := len(layout) + len(slurmTask); n > maxTaskProgram {
		return "", usage("ask for fewer tasks, or shorten the command",
			"the tasks' program would be %d bytes, more than the %d srun can pass on one command line", n, maxTaskProgram)
	}
	b.WriteString("\n" + layout + "\n" + body(slurmTask) + "\n" + body(slurmBatch))
	return b.String(), nil
}

// body is an embedded script without its head, the shellcheck directives
// it needs only when checked alone: up to the first empty line.
func body(script string) string {
	_, b, _ := strings.Cut(script, "\n\n")
	return b
}

// steps splits the tasks (positions in p.Tasks) into those whose exit
// decides the run and those stopped when it ends, as tfhive run decides.
func steps(p *schedule.Plan) (train, serve []int) {
	chief := slices.ContainsFunc(p.Tasks, func(t schedule.Task) bool { return t.Role == schedule.RoleChief })
	for i, t := range p.Tasks {
		switch {
		case p.Torch(), t.Role == schedule.RoleChief, t.Role == schedule.RoleWorker && !chief:
			train = append(train, i)
		default:
			serve = append(serve, i)
		}
	}
	return train, serve
}

// tolerated tasks may fail without ending the run.
func tolerated(p *schedule.Plan, t *schedule.Task) bool {
	if p.Torch() {
		return false
	}
	return t.Role == schedule.RoleEvaluator ||
		t.Role == schedule.RoleWorker && len(p.Cluster.Chief) > 0
}

func nodeList(l *slurmLayout, tasks []int) string {
	s := make([]string, len(tasks))
	for k, i := range tasks {
		s[k] = strconv.Itoa(l.node[i])
	}
	return strings.Join(s, " ")
}

// layoutFunc writes tfhive_layout: per task its id, node, GPUs,
// environment and command, with the values shared by every task set once.
func layoutFunc(o *Options, l *slurmLayout, env []envVar, train, serve []int) string {
	p := l.plan
	w := newShellWords(l.position)
	if !p.Torch() {
		w.share("tfhive_cluster", p.Cluster.JSON())
		for _, j := range []struct {
			name  string
			hosts []string
		}{{"tfhive_ps_hosts", p.Cluster.PS}, {"tfhive_worker_hosts", p.Cluster.Worker}} {
			if len(j.hosts) > 1 {
				w.share(j.name, strings.Join(j.hosts, ","))
			}
		}
	}

	// The environment every task gets, in tfhive run's order: a default,
	// --env, then the plan's own, which always wins.
	var common []string
	set := map[string]bool{}
	for _, e := range env {
		set[e.Name] = true
	}
	if !set["PYTHONUNBUFFERED"] {
		common = append(common, "export PYTHONUNBUFFERED=1")
	}
	for _, e := range env {
		if !e.Secret {
			common = append(common, "export "+e.Name+"="+quote(e.Value))
		}
	}
	same := sameEnv(p.Tasks)
	for _, k := range sortedKeys(same) {
		common = append(common, "export "+k+"="+w.word(same[k]))
	}
	if o.Workdir != "" {
		common = append(common, "tfhive_workdir="+shellPath(o.Workdir))
	}
	if o.fates {
		// Where each task's end goes (tfhive_fate): the directory sbatch
		// ran in, the run's on the login node.
		common = append(common, `tfhive_fates=$SLURM_SUBMIT_DIR`)
	}

	var cases strings.Builder
	for _, st := range []struct {
		name  string
		tasks []int
	}{{"train", train}, {"serve", serve}} {
		for rank, i := range st.tasks {
			t := &p.Tasks[i]
			fmt.Fprintf(&cases, "\t%s:%d)\n", st.name, rank)
			// The plan's CUDA_VISIBLE_DEVICES, which for a torch rank is all
			// its node's ranks' GPUs (cuda:LOCAL_RANK is its own).
			fmt.Fprintf(&cases, "\t\ttfhive_id=%s tfhive_node=%d tfhive_gpus=%s", t.ID, l.node[i], quote(t.Env["CUDA_VISIBLE_DEVICES"]))
			if tolerated(p, t) {
				cases.WriteString(" tfhive_tolerated=1")
			}
			cases.WriteString("\n")
			for _, k := range sortedKeys(t.Env) {
				if _, ok := same[k]; ok || k == "CUDA_VISIBLE_DEVICES" || k == "TFHIVE_TASK" {
					continue
				}
				fmt.Fprintf(&cases, "\t\texport %s=%s\n", k, w.word(t.Env[k]))
			}
			args := make([]string, len(t.Argv))
			for j, a := range t.Argv {
				args[j] = w.word(a)
			}
			fmt.Fprintf(&cases, "\t\ttfhive_argv=(%s)\n\t\t;;\n", strings.Join(args, " "))
		}
	}

	var b strings.Builder
	b.WriteString("# tfhive_layout STEP sets what task $SLURM_PROCID of step STEP runs: its\n")
	b.WriteString("# id, node, GPUs (their positions on the node), environment and command.\n")
	b.WriteString("# \"${tfhive_nodes[N]}\" is node N's name.\n")
	b.WriteString("tfhive_layout() {\n")
	for _, c := range common {
		b.WriteString("\t" + c + "\n")
	}
	for _, v := range w.shared {
		if w.used[v.name] {
			fmt.Fprintf(&b, "\t%s=%s\n", v.name, w.nodesOnly(v.value))
		}
	}
	b.WriteString("\tcase $1:$SLURM_PROCID in\n")
	b.WriteString(cases.String())
	b.WriteString("\tesac\n}\n")
	return b.String()
}

// sameEnv is the part of the plan's environment every task shares.
func sameEnv(tasks []schedule.Task) map[string]string {
	same := map[string]string{}
	for k, v := range tasks[0].Env {
		if k == "CUDA_VISIBLE_DEVICES" || k == "TFHIVE_TASK" {
			continue
		}
		all := true
		for _, t := range tasks[1:] {
			all = all && t.Env[k] == v
		}
		if all && len(tasks) > 1 {
			same[k] = v
		}
	}
	return same
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// taskNote describes a task for the layout comment.
func taskNote(t *schedule.Task) string {
	var what []string
	if t.Port > 0 {
		what = append(what, "port "+strconv.Itoa(t.Port))
	}
	if len(t.GPUs) > 0 {
		what = append(what, "GPUs "+joinInts(t.GPUs))
	}
	if r, ok := t.Env["RANK"]; ok {
		what = append(what, "rank "+r)
	}
	if len(what) == 0 {
		return t.ID
	}
	return t.ID + " (" + strings.Join(what, ", ") + ")"
}

// summary names the tasks: "1 ps, 2 workers, tf".
func summary(p *schedule.Plan) string {
	count := map[string]int{}
	var roles []string
	for _, t := range p.Tasks {
		if count[t.Role] == 0 {
			roles = append(roles, t.Role)
		}
		count[t.Role]++
	}
	var s []string
	for _, r := range roles {
		n := count[r]
		name := r
		if n > 1 && r != schedule.RolePS {
			name += "s"
		}
		s = append(s, fmt.Sprintf("%d %s", n, name))
	}
	fw := "TensorFlow"
	if p.Torch() {
		fw = "torch"
	}
	return strings.Join(s, ", ") + ", " + fw + ", " + p.Strategy
}

// slurmTime writes a time limit as sbatch reads it, rounded up to the
// second: [D-]HH:MM:SS.
func slurmTime(d time.Duration) string {
	s := seconds(d)
	days, s := s/86400, s%86400
	hms := fmt.Sprintf("%02d:%02d:%02d", s/3600, s/60%60, s%60)
	if days > 0 {
		return fmt.Sprintf("%d-%s", days, hms)
	}
	return hms
}

// seconds rounds d up to whole seconds.
func seconds(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }
