// Package slurmrun runs a job on a Slurm cluster as `tfhive run` runs one
// on SSH hosts (`tfhive run --on slurm`): over the one SSH connection to
// the cluster's login node, it writes the batch script that `tfhive plan
// --emit slurm` makes (launcher/emit) and submits it (sbatch --parsable),
// prints the job's output file live as the job writes it (one remote tail
// -F), and once the job has ended reads its record (sacct) into the run's
// record.Summary, the same summary and exit code as a run on hosts.
// Ctrl-C, `tfhive kill` and --detach's keeper stop it with scancel.
// `status --on slurm` and `queue --on slurm` read sinfo and squeue.
//
// The scripts it sends are files of scripts/, their values quoted
// variables ahead of their text (shscript); what it reads back is parsed
// here, against golden files captured from a real Slurm (testdata). It
// imports record, rundir and emit's types, never the commands, the CLI or
// the view.
package slurmrun
