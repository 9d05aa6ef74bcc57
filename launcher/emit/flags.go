package emit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/schedule"
)

// Targets, the values of --emit.
const (
	Slurm      = "slurm"
	TFJob      = "tfjob"
	PyTorchJob = "pytorchjob"
)

// Targets lists the values of --emit, for help text.
var Targets = []string{Slurm, TFJob, PyTorchJob}

// A flagRule says what one flag of `tfhive plan` becomes on each target;
// an empty entry means the flag has no counterpart there and is refused
// (exit 2) with why. The emit guide's table (launcher/help/emit.md,
// `tfhive help emit`) says the same in words, and a test holds the two
// together.
type flagRule struct {
	names []string // as typed, without dashes: "host", "H"
	// why is the reason given when the flag is refused on a target.
	why map[string]string
}

// refused marks the targets a flag has no counterpart on.
func refused(why string, targets ...string) map[string]string {
	m := map[string]string{}
	for _, t := range targets {
		m[t] = why
	}
	return m
}

const (
	whyPlaced   = "the cluster manager places the tasks; nothing is probed"
	whyK8sPlace = "the Kubernetes scheduler places the pods"
	whyTorch    = "a PyTorchJob is a torch world: ranks only"
	// --nic picks an interface from what the probe found on each host,
	// and here nothing is probed.
	whySync = "nothing is contacted to send it to; put the code on the cluster's shared filesystem (Slurm) or in the image (Kubernetes)"
	whyNIC  = "the tasks reach each other by node or Service name; to pin NCCL or gloo to an interface, use --env NCCL_SOCKET_IFNAME=NAME --env GLOO_SOCKET_IFNAME=NAME"
)

// flagRules covers every flag `tfhive plan` accepts besides the job's
// counts and command, which every target takes.
var flagRules = []flagRule{
	{[]string{"host", "H"}, refused(whyPlaced, Slurm, TFJob, PyTorchJob)},
	{[]string{"hosts"}, refused(whyPlaced, Slurm, TFJob, PyTorchJob)},
	{[]string{"hostfile"}, refused(whyPlaced, Slurm, TFJob, PyTorchJob)},
	{[]string{"nnodes", "nproc-per-node"}, refused("torchrun's flags: give --workers", Slurm, TFJob, PyTorchJob)},
	{[]string{"ssh-config"}, refused(whyPlaced, Slurm, TFJob, PyTorchJob)},
	{[]string{"accept-new-host-keys"}, refused(whyPlaced, Slurm, TFJob, PyTorchJob)},
	{[]string{"connect-timeout"}, refused(whyPlaced, Slurm, TFJob, PyTorchJob)},
	{[]string{"command-timeout"}, refused(whyPlaced, Slurm, TFJob, PyTorchJob)},
	{[]string{"parallel"}, refused(whyPlaced, Slurm, TFJob, PyTorchJob)},
	{[]string{"max-util"}, refused("the cluster manager decides which GPUs are free", Slurm, TFJob, PyTorchJob)},
	{[]string{"max-mem"}, refused("the cluster manager decides which GPUs are free", Slurm, TFJob, PyTorchJob)},
	{[]string{"exclude"}, refused("the cluster manager decides which GPUs are free", Slurm, TFJob, PyTorchJob)},
	{[]string{"nic"}, refused(whyNIC, Slurm, TFJob, PyTorchJob)},
	{[]string{"priority"}, refused("the cluster manager orders its own queue (Slurm's --priority/--qos, Kubernetes' PriorityClass)", Slurm, TFJob, PyTorchJob)},
	{[]string{"sync", "sync-exclude"}, refused(whySync, Slurm, TFJob, PyTorchJob)},
	{[]string{"json"}, refused("--json prints tfhive's own plan; --emit prints the job", Slurm, TFJob, PyTorchJob)},
	{[]string{"ps"}, refused(whyTorch, PyTorchJob)},
	{[]string{"gpus-per-ps"}, refused(whyTorch, PyTorchJob)},
	{[]string{"evaluator"}, refused(whyTorch, PyTorchJob)},
	{[]string{"tf-flags"}, refused(whyTorch, PyTorchJob)},
	{[]string{"strategy"}, refused(whyK8sPlace, TFJob, PyTorchJob)},
	{[]string{"log-dir"}, refused("pods log to Kubernetes: kubectl logs", TFJob, PyTorchJob)},
	{[]string{"nodes"}, refused(whyK8sPlace, TFJob, PyTorchJob)},
	{[]string{"gpus-per-node"}, refused(whyK8sPlace, TFJob, PyTorchJob)},
	{[]string{"image"}, refused("Slurm runs the command on the nodes themselves", Slurm)},
	{[]string{"namespace"}, refused("Slurm has no namespaces", Slurm)},
	{[]string{"secret"}, refused("Slurm reads --env NAME from sbatch's environment (--export)", Slurm)},
	{[]string{"param", "random", "seed", "max-parallel"}, refused(whySweep, TFJob, PyTorchJob)},
}

// whySweep: a sweep is emitted as a Slurm job array only.
const whySweep = "a sweep is emitted as a Slurm job array (--emit slurm)"

// SweepOnly are plan's flags for a sweep's job array.
var SweepOnly = []string{"param", "random", "seed", "max-parallel"}

// Refusal says why flag (without dashes) has no counterpart on target,
// or "" when it has one.
func Refusal(target, flag string) string {
	for _, r := range flagRules {
		if slices.Contains(r.names, flag) {
			return r.why[target]
		}
	}
	return ""
}

// checkFlags refuses the given flags that have no counterpart on target.
func checkFlags(target string, given []string) error {
	for _, r := range flagRules {
		for _, n := range r.names {
			if !slices.Contains(given, n) {
				continue
			}
			if why, ok := r.why[target]; ok {
				return &schedule.UsageError{
					Msg: fmt.Sprintf("%s has no counterpart in --emit %s: %s", dashed(n), target, why),
					Fix: "drop " + dashed(n) + "; `tfhive help emit` maps every flag to each target",
				}
			}
		}
	}
	return nil
}

// EmitOnly are the flags that mean something only with --emit, so that
// `tfhive plan` can refuse them without it.
var EmitOnly = []string{"image", "namespace", "secret", "nodes", "gpus-per-node", "env", "workdir", "setup", "log-dir", "grace", "timeout"}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func checkTarget(target string) error {
	if !slices.Contains(Targets, target) {
		return &schedule.UsageError{
			Msg: fmt.Sprintf("unknown --emit target %q", target),
			Fix: "use --emit " + strings.Join(Targets, ", --emit "),
		}
	}
	return nil
}
