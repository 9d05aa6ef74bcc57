// Package emit turns a tfhive job request into the same job for a cluster
// manager: an sbatch script for Slurm, a Kubeflow TFJob or PyTorchJob
// manifest for Kubernetes. It is what `tfhive plan --emit` prints.
//
// It is pure: a schedule.Request and the run flags in, text out. Nothing
// is probed and no host is contacted: the cluster manager places the tasks.
// The one program it runs is `bash -n`, which parses the script it prints.
// The Slurm script still follows tfhive's rules (ps on distinct nodes first,
// the chief as rank 0, the evaluator outside the cluster, ports as tfhive
// picks them, placeholders filled per task) because its layout is planned
// by schedule.Make itself, on made-up nodes whose names are markers that the
// script replaces with the job's real nodes when it runs.
//
// It imports schedule and probe/inventory (the plain data schedule plans
// from), never probe's SSH parts or the rest of launcher: an emitted job
// never runs through tfhive.
package emit
