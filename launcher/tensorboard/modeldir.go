package tensorboard

import (
	"fmt"
	"strings"

	"github.com/tfhive/tfhive/schedule"
)

// EnvModelDir names a run's model_dir when its command line does not:
// `run --env TFHIVE_MODEL_DIR=DIR` (or the hosts file's env:), read from
// the task's environment in the plan.
const EnvModelDir = "TFHIVE_MODEL_DIR"

// dirFlags are the flags that name where TensorFlow scripts write their
// summaries, as the examples and Keras' TensorBoard callback are told:
// --model_dir (tf.estimator's, the examples'), --logdir and --log_dir
// (TensorBoard's own word, Keras'), with - or _, = or a separate word.
var dirFlags = []string{"model_dir", "model-dir", "logdir", "log_dir", "log-dir"}

// ModelDir is where a run's summaries are: its chief's (or, without one,
// its first task's) model_dir, and that task's host. TFHIVE_MODEL_DIR in
// the task's environment wins over a flag of its command line, which
// tfhive has filled in ({run_id} and the like are the task's).
func ModelDir(p schedule.Plan) (host, dir string, err error) {
	var tasks []schedule.Task
	for _, t := range p.Tasks {
		if t.Role == "chief" || t.Role == "worker" && t.Index == 0 || t.Role == "master" {
			tasks = append(tasks, t)
		}
	}
	tasks = append(tasks, p.Tasks...)
	for _, t := range tasks {
		if d := t.Env[EnvModelDir]; d != "" {
			return t.Host, d, nil
		}
		if d := flagDir(t.Argv); d != "" {
			return t.Host, d, nil
		}
	}
	return "", "", fmt.Errorf("run %s's command names no model dir (--model_dir, --logdir or --log_dir; or run --env %s=DIR)", p.RunID, EnvModelDir)
}

// flagDir is the value of the first of dirFlags in argv.
func flagDir(argv []string) string {
	for i, a := range argv {
		name, value, eq := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "--" {
			continue
		}
		for _, f := range dirFlags {
			if name != f {
				continue
			}
			if eq {
				return value
			}
			if i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
				return argv[i+1]
			}
		}
	}
	return ""
}
