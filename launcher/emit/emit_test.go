package emit

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/probe/testkit"
	"github.com/tfhive/tfhive/schedule"
)

// job builds Options as `tfhive plan` does from its flags: the request at
// its defaults, then the case's changes.
func job(target string, change func(o *Options), command ...string) Options {
	r := schedule.NewRequest()
	r.RunID = "r1"
	r.Command = command
	o := Options{Target: target, Request: r, NameGiven: true, Grace: 10 * time.Second}
	if change != nil {
		change(&o)
	}
	return o
}

type goldenCase struct {
	name string
	opts Options
}

var goldenCases = []goldenCase{
	{"slurm-ps-workers.sh", job(Slurm, func(o *Options) {
		o.Request.PS, o.Request.Workers, o.Request.GPUsPerWorker = 1, 2, 0
	}, "/opt/trainer", "--steps", "100")},
	{"slurm-chief-workers-evaluator.sh", job(Slurm, func(o *Options) {
		r := &o.Request
		r.PS, r.Chief, r.Workers, r.Evaluator, r.GPUsPerWorker = 2, true, 2, true, 2
		r.Strategy = schedule.StrategyPack
		o.GPUsPerNode = 4
		o.Env = []string{"WANDB_API_KEY", "LR=0.1", "GREETING=it's $HOME"}
		o.Workdir, o.Setup, o.LogDir = "~/proj", "source venv/bin/activate\nexport X=1", "logs"
		o.Timeout, o.Grace = 90*time.Minute+time.Second/2, 30*time.Second
	}, "python", "train.py", "--model_dir=/shared/{run_id}", "--task", "{job_name}:{task_index}", "--gpus={gpus}", "--config", "{tf_config}")},
	{"slurm-torch.sh", job(Slurm, func(o *Options) {
		o.Request.Framework, o.Request.Workers = schedule.FrameworkTorch, 4
		o.Nodes = 2
	}, "python", "train.py", "--rank", "{rank}", "--master", "{master_addr}:{master_port}", "--host", "{host}")},
	{"slurm-tf-flags.sh", job(Slurm, func(o *Options) {
		o.Request.PS, o.Request.Workers, o.Request.TFFlags = 2, 3, true
		o.Request.PortLo, o.Request.PortHi = 5000, 5010
	}, "python", "tf1.py", "--ps={ps_hosts}", "--cluster={cluster_spec}")},
	{"tfjob-ps-workers.yaml", job(TFJob, func(o *Options) {
		o.Request.PS, o.Request.Workers = 2, 4
		o.Image = "ghcr.io/me/train:1.0"
	}, "python", "train.py")},
	{"tfjob-chief-workers-evaluator.yaml", job(TFJob, func(o *Options) {
		r := &o.Request
		r.PS, r.Chief, r.Workers, r.Evaluator = 1, true, 2, true
		o.Image, o.Namespace, o.Secret = "ghcr.io/me/train:1.0", "ml", "wandb"
		o.Env = []string{"WANDB_API_KEY", "GREETING=$(hello) $x", "PYTHONUNBUFFERED=0"}
		o.Workdir, o.Setup = "/work", "source venv/bin/activate"
		o.Timeout, o.Grace = 2*time.Hour, 30*time.Second
	}, "python", "train.py", "--job", "{job_name}", "--index", "{task_index}", "--cluster", "{cluster_spec}",
		"--tf_config", "{tf_config}", "--host", "{host}", "--gpus", "{gpus}", "--ps", "{ps_hosts}", "--port", "{port}", "yes", "$(HOME)")},
	{"tfjob-tf-flags.yaml", job(TFJob, func(o *Options) {
		o.Request.PS, o.Request.Workers, o.Request.TFFlags, o.Request.GPUsPerWorker = 1, 2, true, 0
		o.Image = "tensorflow/tensorflow:1.15.5"
		o.NameGiven = false
	}, "python", "tf1.py")},
	{"pytorchjob-workers.yaml", job(PyTorchJob, func(o *Options) {
		o.Request.Workers, o.Request.GPUsPerWorker = 4, 8
		o.Image = "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"
	}, "python", "train.py", "--rank", "{rank}", "--world", "{world_size}", "--master", "{master_addr}:{master_port}")},
	{"pytorchjob-chief.yaml", job(PyTorchJob, func(o *Options) {
		o.Request.Chief, o.Request.Workers = true, 2
		o.Image = "pytorch/pytorch:2.3.0"
	}, "python", "train.py", "--index", "{task_index}")},
	{"slurm-sweep.sh", job(Slurm, func(o *Options) {
		o.Request.Workers, o.Request.GPUsPerWorker = 2, 1
		o.Request.RunID = "sw"
		o.Sweep = &record.Sweep{Name: "sw", Params: []record.SweepParam{
			{Name: "lr", Values: []string{"0.1", "1e-3"}}, {Name: "opt", Values: []string{"adam", "it's sgd"}}}}
		o.Sweep.Trials = sweep.Trials(*o.Sweep)
		o.MaxParallel, o.LogDir = 2, "logs"
	}, "python", "train.py", "--lr={lr}", "--opt", "{opt}", "--out=/shared/{run_id}/{lr}", "{task_index}")},
}

func TestGolden(t *testing.T) {
	// --env WANDB_API_KEY names a secret: its value here must never show.
	t.Setenv("WANDB_API_KEY", "s3cret-value")
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, c.opts); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			if strings.Contains(got, "s3cret-value") {
				t.Errorf("the secret's value is in the output")
			}
			checkGolden(t, c.name, got)
			if strings.HasSuffix(c.name, ".sh") {
				shellcheck(t, got)
			} else {
				validateManifest(t, got)
			}
		})
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	testkit.Golden(t, filepath.Join("testdata", "golden", name), []byte(got))
}

// shellcheck lints a whole emitted script, as a user might, for warnings
// and errors: the script holds the user's text too (a --setup sourcing a
// file shellcheck cannot follow is no mistake). CI installs shellcheck;
// elsewhere the check is skipped without it.
func shellcheck(t *testing.T, script string) {
	t.Helper()
	if _, err := exec.LookPath("shellcheck"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("shellcheck is not installed (apt-get install shellcheck)")
		}
		t.Log("shellcheck not installed: not run")
		return
	}
	cmd := exec.Command("shellcheck", "--severity=warning", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// usageErr runs Write and wants exit 2 with msg in the error.
func wantUsage(t *testing.T, o Options, msg string) {
	t.Helper()
	err := Write(&bytes.Buffer{}, o)
	var ue *schedule.UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want a usage error (exit 2) saying %q", err, msg)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("got %q, want it to say %q", err, msg)
	}
}

func TestRefused(t *testing.T) {
	for _, c := range []struct {
		target string
		given  []string
		msg    string
	}{
		{Slurm, []string{"host", "H"}, "--host has no counterpart in --emit slurm: the cluster manager places the tasks"},
		{TFJob, []string{"hosts"}, "--hosts has no counterpart in --emit tfjob"},
		{Slurm, []string{"exclude"}, "--exclude has no counterpart in --emit slurm: the cluster manager decides which GPUs are free"},
		{Slurm, []string{"json"}, "--json has no counterpart"},
		{PyTorchJob, []string{"nic"}, "--nic has no counterpart in --emit pytorchjob"},
		{Slurm, []string{"image"}, "--image has no counterpart in --emit slurm"},
		{Slurm, []string{"secret"}, "--secret has no counterpart in --emit slurm"},
		{TFJob, []string{"strategy"}, "--strategy has no counterpart in --emit tfjob: the Kubernetes scheduler places the pods"},
		{TFJob, []string{"nodes"}, "--nodes has no counterpart in --emit tfjob"},
		{PyTorchJob, []string{"log-dir"}, "--log-dir has no counterpart in --emit pytorchjob: pods log to Kubernetes"},
		{PyTorchJob, []string{"ps"}, "--ps has no counterpart in --emit pytorchjob"},
		{PyTorchJob, []string{"evaluator"}, "--evaluator has no counterpart in --emit pytorchjob"},
	} {
		o := job(c.target, func(o *Options) { o.Image = "x" }, "python", "train.py")
		o.Given = c.given
		wantUsage(t, o, c.msg)
	}
}

func TestUsage(t *testing.T) {
	t.Setenv("WANDB_API_KEY", "x")
	for _, c := range []struct {
		opts Options
		msg  string
	}{
		{job("kubernetes", nil, "python"), `unknown --emit target "kubernetes"`},
		{job(TFJob, nil, "python"), "--emit tfjob needs --image"},
		{job(PyTorchJob, nil, "python"), "--emit pytorchjob needs --image"},
		{job(TFJob, func(o *Options) { o.Image, o.Env = "x", []string{"WANDB_API_KEY"} }, "python"),
			"--env WANDB_API_KEY reads a secret, but no --secret names the Kubernetes Secret"},
		{job(TFJob, func(o *Options) { o.Image, o.Secret = "x", "s" }, "python"), "--secret s is given, but no --env NAME reads from it"},
		{job(TFJob, func(o *Options) { o.Image, o.Request.Framework = "x", schedule.FrameworkTorch }, "python"),
			"--emit tfjob cannot be used with --framework torch"},
		{job(PyTorchJob, func(o *Options) { o.Image, o.Given = "x", []string{"framework"} }, "python"),
			"--emit pytorchjob cannot be used with --framework tf"},
		{job(TFJob, func(o *Options) { o.Image, o.Request.RunID = "x", "Run_1" }, "python"), `--name "Run_1" cannot name a tfjob`},
		{job(TFJob, func(o *Options) { o.Image, o.Request.RunID = "x", "r"+strings.Repeat("x", 55) }, "python"), "is too long"},
		{job(TFJob, func(o *Options) { o.Image, o.Namespace = "x", "My NS" }, "python"), `bad --namespace "My NS"`},
		{job(TFJob, func(o *Options) { o.Image, o.Workdir = "x", "~/proj" }, "python"), `--workdir "~/proj" is not absolute`},
		{job(PyTorchJob, func(o *Options) { o.Image, o.Request.Workers = "x", 3 }, "python", "{task_index}"),
			"{task_index} has no value in a PyTorchJob's Worker pods without --chief"},
		{job(PyTorchJob, func(o *Options) { o.Image = "x" }, "python", "{job_name}"), "placeholder {job_name} cannot be used with --framework torch"},
		{job(Slurm, nil, "python", "{jobname}"), "unknown placeholder {jobname}"},
		{job(Slurm, nil), "no command given"},
		{job(Slurm, func(o *Options) { o.Env = []string{"1X=2"} }, "python"), `"1X" is not a variable name`},
		{job(Slurm, func(o *Options) { o.Timeout = -time.Second }, "python"), "--timeout must not be negative"},
		{job(Slurm, nil, "echo", "@tfhive-node-0@"), "the command holds"},
		{job(Slurm, func(o *Options) { o.LogDir = "my logs" }, "python"), `--log-dir "my logs" cannot be written on an #SBATCH line`},
		{job(Slurm, func(o *Options) { o.Request.Workers, o.GPUsPerNode = 2, 1; o.Request.GPUsPerWorker = 2 }, "python"),
			"2 tasks asking 4 GPUs in all do not fit on 2 nodes of 1 GPUs"},
		{job(Slurm, func(o *Options) { o.Request.Workers, o.Nodes = 3, 1; o.Request.PortLo, o.Request.PortHi = 2222, 2223 }, "python"),
			"do not fit on 1 nodes"},
		{job(Slurm, func(o *Options) { o.Setup = "if then" }, "python"), "the script does not parse (bash -n)"},
	} {
		wantUsage(t, c.opts, c.msg)
	}
}

// TestDollarsStayLiteral: tfhive passes every argument byte for byte;
// Kubernetes expands $(VAR) in command, args and env values unless the $
// is doubled.
func TestDollarsStayLiteral(t *testing.T) {
	var b bytes.Buffer
	o := job(TFJob, func(o *Options) { o.Image, o.Env = "x", []string{"A=$(B)"} }, "echo", "$(HOME) $$ $x")
	if err := Write(&b, o); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`- "$$(HOME) $$$$ $$x"`, `value: "$$(B)"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %s in\n%s", want, b.String())
		}
	}
}
