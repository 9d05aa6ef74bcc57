package emit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/schedule"
)

// TestSlurmLayoutIsThePlan runs the script's tfhive_layout in bash for
// every task and compares what it sets with the plan schedule.Make made,
// the nodes' names put where the markers were: the quoting, the shared
// variables and the node references must give back exactly tfhive's
// values, for arguments no shell should touch.
func TestSlurmLayoutIsThePlan(t *testing.T) {
	hostile := []string{"it's", "$HOME", "a\nb", "`id`", `"q"`, "\\", "tab\there", "*", "~", "a,b", "",
		"{ps_hosts}", "--w={worker_hosts}", "{tf_config}", "{cluster_spec}", "{host}", "{{job_name}}", "{gpus}", "{port}"}
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"tf", job(Slurm, func(o *Options) {
			o.Request.PS, o.Request.Chief, o.Request.Workers, o.Request.Evaluator = 2, true, 3, true
			o.Nodes, o.GPUsPerNode = 3, 2
		}, append([]string{"train"}, hostile...)...)},
		{"tf1", job(Slurm, func(o *Options) {
			o.Request.PS, o.Request.Workers, o.Request.TFFlags, o.Request.GPUsPerWorker = 2, 3, true, 0
		}, append([]string{"train"}, hostile...)...)},
		{"torch", job(Slurm, func(o *Options) {
			o.Request.Framework, o.Request.Chief, o.Request.Workers = schedule.FrameworkTorch, true, 4
			o.Nodes = 2
		}, "train", "{rank}", "{master_addr}:{master_port}", "{host}", "it's")},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.opts
			if err := o.check(); err != nil {
				t.Fatal(err)
			}
			script, err := slurmScript(&o)
			if err != nil {
				t.Fatal(err)
			}
			l, err := planSlurm(o.Request, o.Nodes, o.GPUsPerNode)
			if err != nil {
				t.Fatal(err)
			}
			names := []string{"alpha", "beta-2", "gamma.example.org"}
			real := func(s string) string {
				return markerRE2.ReplaceAllStringFunc(s, func(m string) string {
					n, _ := strconv.Atoi(strings.Trim(strings.TrimPrefix(m, markerPrefix), "@"))
					return names[l.position[n]]
				})
			}
			_, layout, _ := strings.Cut(script, "\ntfhive_layout() {\n")
			layout, _, _ = strings.Cut(layout, "\n}\n")
			train, serve := steps(l.plan)
			for _, st := range []struct {
				name  string
				tasks []int
			}{{"train", train}, {"serve", serve}} {
				for rank, i := range st.tasks {
					task := l.plan.Tasks[i]
					var keys []string
					for k := range task.Env {
						if k != "CUDA_VISIBLE_DEVICES" && k != "TFHIVE_TASK" {
							keys = append(keys, k)
						}
					}
					prog := "tfhive_nodes=(" + strings.Join(names, " ") + ")\ntfhive_layout() {\n" + layout + "\n}\n" +
						"SLURM_PROCID=" + strconv.Itoa(rank) + " tfhive_layout " + st.name + "\n" +
						`printf '%s\0' "$tfhive_id" "$tfhive_node" "$tfhive_gpus" "${#tfhive_argv[@]}" "${tfhive_argv[@]}"` + "\n"
					for _, k := range keys {
						prog += `printf '%s\0' "$` + k + `"` + "\n"
					}
					out, err := exec.Command("bash", "-c", prog).Output()
					if err != nil {
						t.Fatalf("%s:%d: %v", st.name, rank, err)
					}
					got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
					want := []string{task.ID, strconv.Itoa(l.node[i]), task.Env["CUDA_VISIBLE_DEVICES"], strconv.Itoa(len(task.Argv))}
					for _, a := range task.Argv {
						want = append(want, real(a))
					}
					for _, k := range keys {
						want = append(want, real(task.Env[k]))
					}
					if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
						t.Errorf("%s:%d (%s):\n got %q\nwant %q", st.name, rank, task.ID, got, want)
					}
				}
			}
		})
	}
}

// markerRE2 finds markers anywhere in a string.
var markerRE2 = regexp.MustCompile(markerPrefix + `[0-9]+@`)

// TestShellWords covers quoting alone.
func TestShellWords(t *testing.T) {
	w := newShellWords(map[int]int{0: 0, 5: 1})
	w.share("tfhive_x", marker(0)+":1,"+marker(5)+":2")
	for in, want := range map[string]string{
		"":                        "''",
		"plain-word_1.2/x:y=z@%+": "plain-word_1.2/x:y=z@%+",
		"it's":                    `'it'\''s'`,
		"a,b":                     `'a,b'`,
		marker(5):                 `"${tfhive_nodes[1]}"`,
		"--h=" + marker(0) + ":1": `--h="${tfhive_nodes[0]}":1`,
		"x" + marker(0) + ":1," + marker(5) + ":2y": `x"$tfhive_x"y`,
	} {
		if got := w.word(in); got != want {
			t.Errorf("word(%q) = %s, want %s", in, got, want)
		}
	}
	var b bytes.Buffer
	b.WriteString(w.nodesOnly(marker(0) + ":1," + marker(5) + ":2"))
	if want := `"${tfhive_nodes[0]}"':1,'"${tfhive_nodes[1]}":2`; b.String() != want {
		t.Errorf("nodesOnly = %s, want %s", b.String(), want)
	}
	if got := shellPath("~/my dir"); got != `"$HOME"/'my dir'` {
		t.Errorf("shellPath = %s", got)
	}
}

// TestSlurmArrayTrials runs the job array's trial selection and layout
// in bash for every array index: each sets its own parameters, exported,
// and the command with its values where {NAME} and {run_id} were, byte
// for byte; an index that is no trial is exit 2.
func TestSlurmArrayTrials(t *testing.T) {
	o := job(Slurm, func(o *Options) {
		o.Request.RunID, o.Request.Workers, o.Request.GPUsPerWorker = "sw", 1, 0
		o.Sweep = &record.Sweep{Name: "sw", Params: []record.SweepParam{
			{Name: "lr", Values: []string{"0.1", "it's $HOME"}}, {Name: "b", Values: []string{"`id`", "a b", "{lr}"}}}}
		o.Sweep.Trials = sweep.Trials(*o.Sweep)
	}, "train", "--lr={lr}", "{b}{lr}", "/out/{run_id}", "{{x}}")
	var b bytes.Buffer
	if err := Write(&b, o); err != nil {
		t.Fatal(err)
	}
	script := b.String()
	start := strings.Index(script, "\ncase ${SLURM_ARRAY_TASK_ID-} in")
	end := strings.Index(script, "\n\tesac\n}\n")
	if start < 0 || end < 0 {
		t.Fatalf("no trial case or layout:\n%s", script)
	}
	prog := script[start:end] + "\n\tesac\n}\ntfhive_nodes=(n0)\ntfhive_layout train\n" +
		`printf '%s\0' "${tfhive_argv[@]}" "$lr" "$b" "$TFHIVE_TRIAL" "$TFHIVE_RUN_ID"`
	for i, tr := range o.Sweep.Trials {
		cmd := exec.Command("bash", "-c", prog)
		cmd.Env = []string{"SLURM_ARRAY_TASK_ID=" + strconv.Itoa(i), "SLURM_PROCID=0"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		want := append(sweep.Command([]string{"train", "--lr={lr}", "{b}{lr}", "/out/" + tr.ID, "{x}"}, tr.Params),
			tr.Params["lr"], tr.Params["b"], tr.ID, tr.ID)
		if !slices.Equal(got, want) {
			t.Errorf("trial %d:\n got %q\nwant %q", i, got, want)
		}
	}
	cmd := exec.Command("bash", "-c", prog)
	cmd.Env = []string{"SLURM_ARRAY_TASK_ID=6", "SLURM_PROCID=0"}
	if out, err := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "array task 6 is not a trial of this sweep (0-5)") {
		t.Errorf("index 6: %v\n%s", err, out)
	}
}

// A job of run --on slurm (SlurmJob) has each task's shell leave its end
// in a file of its own in $SLURM_SUBMIT_DIR, named by the job (an array
// task's by the array's id and its index) and the task; a script printed
// for the user (Write) names no such directory and writes none.
func TestSlurmFates(t *testing.T) {
	o := job(Slurm, func(o *Options) { o.Request.Workers, o.Request.GPUsPerWorker = 2, 0 }, "train")
	script, _, err := SlurmJob(o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(script, "\n\ttfhive_fates=$SLURM_SUBMIT_DIR\n") {
		t.Errorf("no tfhive_fates in the layout:\n%s", script)
	}
	var b bytes.Buffer
	if err := Write(&b, o); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "tfhive_fates=") {
		t.Error("plan --emit slurm's script names a directory for the tasks' ends")
	}
	start := strings.Index(script, "\ntfhive_fate() {")
	end := strings.Index(script[start+1:], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatalf("no tfhive_fate:\n%s", script)
	}
	fn := script[start : start+1+end+3]
	dir := t.TempDir()
	for _, tt := range []struct {
		env  []string
		file string
	}{
		{[]string{"SLURM_JOB_ID=5"}, "fate-5-worker:1"},
		{[]string{"SLURM_JOB_ID=12", "SLURM_ARRAY_JOB_ID=9", "SLURM_ARRAY_TASK_ID=3"}, "fate-9_3-worker:1"},
	} {
		cmd := exec.Command("bash", "-c", fn+`tfhive_fates=$1 tfhive_id=worker:1
tfhive_fate exited 7`, "bash", dir)
		cmd.Env = tt.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", tt.env, err, out)
		}
		if b, err := os.ReadFile(filepath.Join(dir, tt.file)); err != nil || string(b) != "exited 7\n" {
			t.Errorf("%v: %s: %q %v", tt.env, tt.file, b, err)
		}
		// A new start of the task (a requeued job) removes it first.
		cmd = exec.Command("bash", "-c", fn+`tfhive_fates=$1 tfhive_id=worker:1
tfhive_fate`, "bash", dir)
		cmd.Env = tt.env
		cmd.Run()
		if _, err := os.Stat(filepath.Join(dir, tt.file)); err == nil {
			t.Errorf("%v: %s left by an earlier start", tt.env, tt.file)
		}
	}
}
