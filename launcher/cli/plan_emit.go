package cli

import (
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tfhive/tfhive/launcher/commands"
)

// emitFlags are plan's flags for --emit: the target, what only a cluster
// manager needs, and the run flags that carry over to one.
func emitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "emit", Category: catOutput, Usage: "print the job for `TARGET` (slurm, tfjob, pytorchjob) instead of a plan; nothing is probed"},
		&cli.StringFlag{Name: "image", Category: catOutput, Usage: "--emit tfjob/pytorchjob: the container `IMAGE` the pods run (required)"},
		&cli.StringFlag{Name: "namespace", Category: catOutput, Usage: "--emit tfjob/pytorchjob: the job's Kubernetes `NAMESPACE`"},
		&cli.StringFlag{Name: "secret", Category: catOutput, Usage: "--emit tfjob/pytorchjob: the Kubernetes Secret `NAME` that --env K reads K from"},
		&cli.IntFlag{Name: "nodes", Category: catOutput, DefaultText: "as many as tasks", Usage: "--emit slurm: spread the tasks over at most `N` nodes"},
		&cli.IntFlag{Name: "gpus-per-node", Category: catOutput, DefaultText: "no limit", Usage: "--emit slurm: the GPUs one node has, `N`"},
		// tfhive run's flags that carry over to a cluster manager.
		&cli.StringSliceFlag{Name: "env", Category: catOutput, Usage: "--emit: set `K=V` in every task, or K to read K where the job runs (sbatch's environment, a Secret)"},
		&cli.StringFlag{Name: "workdir", Category: catOutput, Usage: "--emit: the `DIR` tasks start in"},
		&cli.StringFlag{Name: "setup", Category: catOutput, Usage: "--emit: shell `SNIPPET` run by bash before each task"},
		&cli.StringFlag{Name: "log-dir", Category: catOutput, Usage: "--emit slurm: the `DIR` of the job's output file"},
		&cli.DurationFlag{Name: "grace", Category: catOutput, Value: 10 * time.Second, Usage: "--emit: time `D` between SIGTERM and SIGKILL when tasks are stopped"},
		&cli.DurationFlag{Name: "timeout", Category: catOutput, Usage: "--emit: the job's time limit `D`"},
		// A sweep, as one Slurm job array.
		&cli.StringSliceFlag{Name: "param", Category: catOutput, Usage: "--emit slurm: sweep `NAME=V1,V2,…` (repeatable): a job array, one task per combination, {NAME} in the command"},
		&cli.IntFlag{Name: "random", Category: catOutput, Usage: "--emit slurm --param: `N` combinations picked at random (--seed), not every one"},
		&cli.Int64Flag{Name: "seed", Category: catOutput, Usage: "--emit slurm --random: the pick's seed `S` (the same S, the same trials; default 0)"},
		&cli.IntFlag{Name: "max-parallel", Category: catOutput, Usage: "--emit slurm --param: at most `K` trials at once (--array's %K)"},
	}
}

// emitOptions are plan's --emit flags and the names of every flag given.
func emitOptions(c *cli.Context) commands.EmitOptions {
	var given []string
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			// $TFHIVE_HOSTS names hosts for every command; only a
			// --hosts typed here asks --emit for something it cannot do.
			if c.IsSet(n) && !(n == "hosts" && c.String(n) == os.Getenv("TFHIVE_HOSTS")) {
				given = append(given, n)
			}
		}
	}
	return commands.EmitOptions{
		Target: c.String("emit"),
		Env:    c.StringSlice("env"), Workdir: c.String("workdir"), Setup: c.String("setup"), LogDir: c.String("log-dir"),
		Grace: c.Duration("grace"), Timeout: c.Duration("timeout"),
		Image: c.String("image"), Namespace: c.String("namespace"), Secret: c.String("secret"),
		Nodes: c.Int("nodes"), GPUsPerNode: c.Int("gpus-per-node"),
		Params: c.StringSlice("param"), Random: c.Int("random"), Seed: c.Int64("seed"), MaxParallel: c.Int("max-parallel"),
		Given: given,
	}
}
