package emit

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/schedule"
)

// Options is everything `tfhive plan --emit` was given.
type Options struct {
	Target  string // Slurm, TFJob or PyTorchJob
	Request schedule.Request
	// NameGiven says --name was given. Kubernetes names must start with a
	// letter, so a generated run id (a date) gets "tfhive-" before it.
	NameGiven bool
	// Env holds the --env values as given: K=V sets a value, K names a
	// secret that the emitted job reads when it runs, never from here.
	Env                    []string
	Workdir, Setup, LogDir string
	Grace, Timeout         time.Duration
	// Image, Namespace and Secret are for Kubernetes; Nodes and GPUsPerNode
	// shape a Slurm job (0: as many nodes as tasks, no limit per node).
	Image, Namespace, Secret string
	Nodes, GPUsPerNode       int
	// Given names the flags given on the command line, without dashes, so
	// that those without a counterpart on the target are refused.
	Given []string
	// Sweep, for Slurm, makes the job a job array of its Trials (its Name
	// is the request's run id); MaxParallel caps the trials that run at
	// once (0: no cap). nil: one job.
	Sweep       *record.Sweep
	MaxParallel int

	// fates: each task also writes its end to a file of its own in
	// $SLURM_SUBMIT_DIR (slurm-task.sh's tfhive_fate), which run --on
	// slurm reads (SlurmJob); a script printed for the user writes none.
	fates bool
}

// envVar is one --env: a value, or a secret read where the job runs.
type envVar struct {
	Name, Value string
	Secret      bool
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseEnv reads --env K=V and --env K; a later K wins, in the place of
// its first mention.
func parseEnv(specs []string) ([]envVar, error) {
	var out []envVar
	at := map[string]int{}
	for _, s := range specs {
		k, v, hasValue := strings.Cut(s, "=")
		if !envNameRE.MatchString(k) {
			return nil, usage("", "--env %q: %q is not a variable name", s, k)
		}
		e := envVar{Name: k, Value: v, Secret: !hasValue}
		if i, ok := at[k]; ok {
			out[i] = e
			continue
		}
		at[k] = len(out)
		out = append(out, e)
	}
	return out, nil
}

func (o *Options) secrets() []string {
	var s []string
	env, _ := parseEnv(o.Env)
	for _, e := range env {
		if e.Secret {
			s = append(s, e.Name)
		}
	}
	return s
}

// check refuses what the target cannot express, before anything is
// rendered; Request is validated (and its framework set) here too.
func (o *Options) check() error {
	if err := checkTarget(o.Target); err != nil {
		return err
	}
	if err := checkFlags(o.Target, o.Given); err != nil {
		return err
	}
	r := &o.Request
	r.SetDefaults()
	switch o.Target {
	case TFJob:
		if r.Framework == schedule.FrameworkTorch {
			return usage("use --emit pytorchjob for a torch world", "--emit tfjob cannot be used with --framework torch")
		}
	case PyTorchJob:
		if slices.Contains(o.Given, "framework") && r.Framework != schedule.FrameworkTorch {
			return usage("use --emit tfjob for TensorFlow", "--emit pytorchjob cannot be used with --framework %s", r.Framework)
		}
		r.Framework = schedule.FrameworkTorch
	}
	// A sweep's {NAME} are no placeholders of tfhive's: checked as the
	// markers they become.
	v := *r
	if o.Sweep != nil && o.Target == Slurm {
		if err := o.checkSweep(); err != nil {
			return err
		}
		v.Command = sweepCommand(o.Sweep, r.Command)
	}
	if err := v.Validate(); err != nil {
		return err
	}
	if len(r.Command) == 0 {
		return usage("put the training command after --", "no command given")
	}
	env, err := parseEnv(o.Env)
	if err != nil {
		return err
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--grace", o.Grace}, {"--timeout", o.Timeout}} {
		if d.v < 0 {
			return usage("", "%s must not be negative", d.flag)
		}
	}
	if o.Target == Slurm {
		return o.checkSlurm()
	}
	return o.checkKube(env)
}

func (o *Options) checkSlurm() error {
	if o.Nodes < 0 || o.GPUsPerNode < 0 {
		return usage("", "--nodes and --gpus-per-node must be 0 or more")
	}
	for _, a := range o.Request.Command {
		if strings.Contains(a, markerPrefix) {
			return usage("", "the command holds %q, which tfhive uses for the nodes' names in the script", markerPrefix)
		}
	}
	if o.LogDir != "" && strings.ContainsAny(o.LogDir, " \t\n%\\\"'") {
		return usage("choose a path without spaces, quotes, backslashes or %", "--log-dir %q cannot be written on an #SBATCH line", o.LogDir)
	}
	return nil
}

func (o *Options) checkKube(env []envVar) error {
	if o.Image == "" {
		return usage("name the container image the pods run, e.g. --image ghcr.io/me/train:1.0", "--emit %s needs --image", o.Target)
	}
	hasSecret := false
	for _, e := range env {
		hasSecret = hasSecret || e.Secret
	}
	switch {
	case hasSecret && o.Secret == "":
		return usage("create a Secret holding them (kubectl create secret generic NAME --from-literal=K=V) and name it with --secret NAME",
			"--env %s reads a secret, but no --secret names the Kubernetes Secret that holds it", o.secrets()[0])
	case !hasSecret && o.Secret != "":
		return usage("pass the secret's variables as --env NAME", "--secret %s is given, but no --env NAME reads from it", o.Secret)
	}
	if o.Secret != "" && !dns1123Subdomain(o.Secret) {
		return usage("Secret names are lowercase letters, digits, '-' and '.'", "bad --secret %q", o.Secret)
	}
	if o.Namespace != "" && !dns1123Label(o.Namespace) {
		return usage("namespaces are lowercase letters, digits and '-', at most 63", "bad --namespace %q", o.Namespace)
	}
	if o.Workdir != "" && !strings.HasPrefix(o.Workdir, "/") {
		return usage("a container's workingDir is an absolute path in its image", "--workdir %q is not absolute", o.Workdir)
	}
	if name := o.kubeName(); !dns1035Label(name) {
		// The operator names a pod and its Service NAME-ROLE-INDEX,
		// which must be a DNS-1035 label.
		return usage("use lowercase letters, digits and '-', starting with a letter",
			"--name %q cannot name a %s: the operator names its pods and Services NAME-ROLE-INDEX (DNS-1035)", name, o.Target)
	}
	return nil
}

// kubeName is the job's metadata.name.
func (o *Options) kubeName() string {
	if o.NameGiven {
		return o.Request.RunID
	}
	return "tfhive-" + o.Request.RunID
}

var (
	dns1035RE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	dns1123RE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

func dns1035Label(s string) bool { return len(s) <= 63 && dns1035RE.MatchString(s) }
func dns1123Label(s string) bool { return len(s) <= 63 && dns1123RE.MatchString(s) }

func dns1123Subdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, p := range strings.Split(s, ".") {
		if !dns1123RE.MatchString(p) {
			return false
		}
	}
	return true
}

func usage(hint, format string, a ...any) error {
	return &schedule.UsageError{Msg: fmt.Sprintf(format, a...), Fix: hint}
}
