package sweep

import (
	"maps"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/launcher/record"
)

// Command is a trial's command line: each {NAME} of a declared parameter
// replaced by the trial's value, in every argument. Braces that name no
// parameter stay as they are (a Python -c or a shell ${VAR} is the task's).
func Command(args []string, params map[string]string) []string {
	pairs := make([]string, 0, 2*len(params))
	for _, k := range slices.Sorted(maps.Keys(params)) {
		pairs = append(pairs, "{"+k+"}", params[k])
	}
	r := strings.NewReplacer(pairs...)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// Env is the trial's parameters as NAME=VALUE, sorted, then
// TFHIVE_TRIAL=ID: what the trial's tasks find in their environment.
func Env(t record.SweepTrial) []string {
	out := make([]string, 0, len(t.Params)+1)
	for _, k := range slices.Sorted(maps.Keys(t.Params)) {
		out = append(out, k+"="+t.Params[k])
	}
	return append(out, "TFHIVE_TRIAL="+t.ID)
}

// Unused names the parameters the command never mentions as {NAME}: legal
// (the environment has them), but worth a warning, as a typo often is.
func Unused(args []string, params []record.SweepParam) []string {
	joined := strings.Join(args, "\x00")
	var out []string
	for _, p := range params {
		if !strings.Contains(joined, "{"+p.Name+"}") {
			out = append(out, p.Name)
		}
	}
	return out
}
