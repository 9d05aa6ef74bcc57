package emit

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/sweep"
)

// A sweep (plan --emit slurm --param …) is one Slurm job array: one array
// task per trial, every one the job tfhive plans for the command. The
// command is planned once with a marker where each {NAME} of a parameter
// is (and {run_id}, which is the trial's); the script renders a marker as
// "${NAME}", and the batch script sets NAME from $SLURM_ARRAY_TASK_ID
// before the steps start, exported, so that the tasks find it in their
// environment too, with TFHIVE_TRIAL, the trial's run id.

const paramPrefix = "@tfhive-param-"

func paramMarker(name string) string { return paramPrefix + name + "@" }

var paramRE = regexp.MustCompile(`^` + paramPrefix + `([A-Za-z_][A-Za-z0-9_]*)@`)

// trialVar is the variable that holds the trial's run id.
const trialVar = "TFHIVE_TRIAL"

// checkSweep refuses what a job array cannot hold.
func (o *Options) checkSweep() error {
	s := o.Sweep
	if err := sweep.Validate(s.Params, s.Random); err != nil {
		return usage("", "%v", err)
	}
	for _, p := range s.Params {
		if strings.HasPrefix(strings.ToLower(p.Name), "tfhive_") {
			return usage("choose another name", "--param %s: names starting with tfhive_ are the script's own", p.Name)
		}
	}
	if o.MaxParallel < 0 || o.Sweep.Random < 0 {
		return usage("", "--random and --max-parallel must be 0 or more")
	}
	if len(s.Trials) == 0 {
		return usage("", "the sweep has no trials")
	}
	for _, a := range o.Request.Command {
		if strings.Contains(a, paramPrefix) {
			return usage("", "the command holds %q, which tfhive uses for the parameters in the script", paramPrefix)
		}
	}
	return nil
}

// sweepCommand is the command with a marker for each {NAME} and for
// {run_id}, the trial's.
func sweepCommand(s *record.Sweep, command []string) []string {
	m := map[string]string{"run_id": paramMarker(trialVar)}
	for _, p := range s.Params {
		m[p.Name] = paramMarker(p.Name)
	}
	return sweep.Command(command, m)
}

// arrayLines are the #SBATCH line of the array: one task per trial, at
// most MaxParallel at once.
func arrayLine(o *Options) string {
	s := fmt.Sprintf("#SBATCH --array=0-%d", len(o.Sweep.Trials)-1)
	if o.MaxParallel > 0 {
		s += "%" + strconv.Itoa(o.MaxParallel)
	}
	return s + "\n"
}

// trialCase sets the array task's parameters and trial id, exported.
func trialCase(o *Options) string {
	s := o.Sweep
	var b strings.Builder
	b.WriteString("\n# The sweep's trials, one per array task: each sets its parameters (exported:\n")
	b.WriteString("# the tasks' environment, and {NAME} in their command) and TFHIVE_TRIAL, its\n")
	fmt.Fprintf(&b, "# run id. %s.\n", sweepNote(s))
	b.WriteString("# shellcheck disable=SC2089 # a value's quotes are its own: it is data, not words\n")
	b.WriteString("case ${SLURM_ARRAY_TASK_ID-} in\n")
	for i, t := range s.Trials {
		fmt.Fprintf(&b, "%d)", i)
		for _, p := range s.Params {
			fmt.Fprintf(&b, " %s=%s", p.Name, quote(t.Params[p.Name]))
		}
		fmt.Fprintf(&b, " %s=%s ;;\n", trialVar, quote(t.ID))
	}
	b.WriteString("*)\n")
	fmt.Fprintf(&b, "\techo \"tfhive: error: array task ${SLURM_ARRAY_TASK_ID-(none)} is not a trial of this sweep (0-%d): submit the script as it is\" >&2\n", len(s.Trials)-1)
	b.WriteString("\texit 2\n\t;;\nesac\n")
	b.WriteString("# shellcheck disable=SC2090 # each is one word, quoted wherever it is used\n")
	b.WriteString("export")
	for _, p := range s.Params {
		b.WriteString(" " + p.Name)
	}
	b.WriteString(" " + trialVar + "\n")
	return b.String()
}

// sweepNote says how the trials were chosen.
func sweepNote(s *record.Sweep) string {
	var ps []string
	for _, p := range s.Params {
		ps = append(ps, p.Name)
	}
	how := "every combination of " + strings.Join(ps, ", ")
	if s.Random > 0 {
		how = fmt.Sprintf("%d combinations of %s picked with --seed %d", len(s.Trials), strings.Join(ps, ", "), s.Seed)
	}
	return fmt.Sprintf("%d trials: %s", len(s.Trials), how)
}
