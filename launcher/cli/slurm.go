package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/tfhive/tfhive/launcher/commands"
)

// slurmFlags are run's flags for --on slurm: where the job goes and
// sbatch's own choices.
func slurmFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "on", Category: catSlurm, Usage: "run the job on `PLACE` instead of the hosts: slurm (a Slurm cluster, through its --login node)"},
		&cli.StringFlag{Name: "login", Category: catSlurm, Usage: "the Slurm cluster's login node `HOST` (of the hosts file, or [user@]host[:port]); sbatch, squeue and sacct run there"},
		&cli.StringFlag{Name: "partition", Category: catSlurm, Usage: "sbatch's --partition `P`"},
		&cli.StringFlag{Name: "account", Category: catSlurm, Usage: "sbatch's --account `A`"},
		&cli.StringFlag{Name: "time", Category: catSlurm, Usage: "sbatch's --time `T` (as sbatch takes it: 30, 2:00:00, 1-0)"},
		&cli.IntFlag{Name: "nodes", Category: catSlurm, DefaultText: "as many as tasks", Usage: "spread the tasks over at most `N` nodes"},
		&cli.IntFlag{Name: "gpus-per-node", Category: catSlurm, DefaultText: "no limit", Usage: "the GPUs one node has, `N`"},
	}
}

// slurmPlaceFlags are status's and queue's for --on slurm.
func slurmPlaceFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "on", Category: catSlurm, Usage: "show `PLACE` instead of the hosts: slurm (a Slurm cluster, through its --login node)"},
		&cli.StringFlag{Name: "login", Category: catSlurm, Usage: "the Slurm cluster's login node `HOST` (of the hosts file, or [user@]host[:port])"},
		&cli.StringFlag{Name: "partition", Category: catSlurm, Usage: "only partition `P`"},
	}
}

// slurmOptions are --on slurm's flags and the names of every flag given
// (--on slurm refuses those it cannot honour).
func slurmOptions(c *cli.Context) commands.SlurmOptions {
	var given []string
	if c.Command != nil {
		for _, f := range c.Command.Flags {
			if n := f.Names()[0]; c.IsSet(n) {
				given = append(given, n)
			}
		}
	}
	return commands.SlurmOptions{
		On: c.String("on"), Login: c.String("login"), Partition: c.String("partition"), Account: c.String("account"),
		Time: c.String("time"), Nodes: c.Int("nodes"), GPUsPerNode: c.Int("gpus-per-node"), Given: given,
	}
}
