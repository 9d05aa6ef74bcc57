package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/rundir"
)

// completeWords runs `tfhive __complete args...` and returns the answer's
// kind line and its candidate words (descriptions dropped).
func completeWords(t *testing.T, args ...string) (head string, words []string) {
	t.Helper()
	err, stdout, stderr := tfhive(t, append([]string{"__complete"}, args...)...)
	if err != nil || stderr != "" {
		t.Fatalf("__complete %q: %v, stderr %q (want exit 0 and nothing)", args, err, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	for _, l := range lines[1:] {
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	return lines[0], words
}

func TestCompleteCommandsAndFlags(t *testing.T) {
	isolate(t)
	for _, c := range []struct {
		args []string
		want []string // exactly, in order
	}{
		{[]string{"sta"}, []string{"status", "stacks"}},
		{[]string{"run", "--worke"}, []string{"--workers"}},
		{[]string{"run", "--wo"}, []string{"--workers", "--workdir"}},
		{[]string{"--"}, []string{"--help", "--version"}},
		{[]string{"help", "k"}, []string{"kill"}},
		{[]string{"help", "ho"}, []string{"hosts"}},
		{[]string{"help", "long"}, []string{"long-runs"}},
		{[]string{"qu"}, []string{"queue"}},
		{[]string{"queue", "--j"}, []string{"--json"}},
		{[]string{"run", "--priority", ""}, []string{"low", "normal", "high"}},
		{[]string{"help", "status", ""}, nil},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{[]string{"completion", "bash", ""}, nil},
		{[]string{"nosuch", ""}, nil},
		{[]string{"__complete", ""}, nil},
		// Flags already given are not offered again, unless repeatable.
		{[]string{"ps", "--json", "--j"}, nil},
		{[]string{"status", "--exclude", "a", "--ex"}, []string{"--exclude"}},
		{[]string{"plan", "--framework", ""}, []string{"tf", "torch"}},
		{[]string{"plan", "--strategy=p"}, []string{"--strategy=pack"}},
		{[]string{"plan", "--emit", ""}, []string{"slurm", "tfjob", "pytorchjob"}},
		{[]string{"run", "--json="}, nil},
		{[]string{"gc", "--d"}, []string{"--dry-run"}},
		{[]string{"run", "--sync-e"}, []string{"--sync-exclude"}},
		{[]string{"run", "--sync-exclude", ""}, nil},
		// Flags after the run id too, as tfhive reads them (flagsFirst);
		// after "--", or after run's command, everything is the task's.
		{[]string{"kill", "r1", ""}, nil},
		{[]string{"kill", "r1", "--gr"}, []string{"--grace"}},
		{[]string{"logs", "r1", "--task", "w"}, nil},
		{[]string{"logs", "r1", "--log-dir", "x", "--f"}, []string{"--follow"}},
		{[]string{"logs", "--", "r1", "--f"}, nil},
		// Values nobody can guess are left alone.
		{[]string{"run", "--workers", ""}, nil},
		{[]string{"run", "--workdir", ""}, nil},
	} {
		head, got := completeWords(t, c.args...)
		if head != "words\t" || !slices.Equal(got, c.want) {
			t.Errorf("%q: %q %q, want %q", c.args, head, got, c.want)
		}
	}
	// No argument yet: the commands, help too, never the hidden one; a
	// command taking none: its flags.
	if _, got := completeWords(t, ""); !slices.Contains(got, "kill") || !slices.Contains(got, "help") || slices.Contains(got, "__complete") {
		t.Errorf("commands: %q", got)
	}
	if _, got := completeWords(t, "status", ""); !slices.Contains(got, "--host") || !slices.Contains(got, "-H") || !slices.Contains(got, "--help") {
		t.Errorf("status flags: %q", got)
	}
	for _, args := range [][]string{{"run", "python", "--wo"}, {"run", "--", "python", "--wo"}} {
		if head, got := completeWords(t, args...); head != "files\t" || got != nil {
			t.Errorf("%q: %q %q, want the task's (files)", args, head, got)
		}
	}
	err, stdout, _ := tfhive(t, "__complete", "status", "--", "")
	if err != nil || stdout != "words\t\n" {
		t.Errorf("status --: %v %q", err, stdout)
	}
}

func TestCompletePaths(t *testing.T) {
	isolate(t)
	for _, c := range []struct {
		args []string
		head string
	}{
		{[]string{"status", "--hosts", "h"}, "files\t"},
		{[]string{"status", "--hosts=h"}, "files\t--hosts="},
		{[]string{"ps", "--ssh-config", ""}, "files\t"},
		{[]string{"run", "--log-dir", ""}, "dirs\t"},
		{[]string{"run", "--log-dir=x"}, "dirs\t--log-dir="},
		{[]string{"runs", "--log-root", ""}, "dirs\t"},
		{[]string{"plan", "--sync", "sr"}, "dirs\t"},
		{[]string{"doctor", "--sync=sr"}, "dirs\t--sync="},
		// The tasks' command, once begun: local paths, often.
		{[]string{"run", "py"}, "files\t"},
		{[]string{"run", "--", ""}, "files\t"},
		{[]string{"plan", "--workers", "2", "--", "python", "tr"}, "files\t"},
	} {
		if head, words := completeWords(t, c.args...); head != c.head || words != nil {
			t.Errorf("%q: %q %q, want %q", c.args, head, words, c.head)
		}
	}
}

func TestCompleteHosts(t *testing.T) {
	dir := isolate(t)
	os.MkdirAll(filepath.Join(dir, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(dir, ".ssh", "config"), []byte("Host gpu01 lab-*\n  Port 2222\nHost gpu02 gpu01\n"), 0o600)
	os.WriteFile("hosts.yaml", []byte("hosts:\n  - gpu03\n  - address: gpu04\n"), 0o600)
	os.WriteFile("other.yaml", []byte("hosts:\n  - gpu05\n"), 0o600)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", "-H", ""}, []string{"gpu03", "gpu04", "gpu01", "gpu02"}},
		{[]string{"status", "--host=gpu0"}, []string{"--host=gpu03", "--host=gpu04", "--host=gpu01", "--host=gpu02"}},
		{[]string{"status", "-H", "bob@gpu02,alice@gpu0"}, []string{"bob@gpu02,alice@gpu03", "bob@gpu02,alice@gpu04", "bob@gpu02,alice@gpu01", "bob@gpu02,alice@gpu02"}},
		{[]string{"status", "--hosts", "other.yaml", "-H", "g"}, []string{"gpu05", "gpu01", "gpu02"}},
		{[]string{"status", "--ssh-config", "/dev/null", "-H", ""}, []string{"gpu03", "gpu04"}},
		// --exclude: the hosts the line uses.
		{[]string{"run", "--exclude", ""}, []string{"gpu03", "gpu04"}},
		{[]string{"run", "-H", "gpu01,gpu02", "--exclude", "gpu0"}, []string{"gpu01", "gpu02"}},
		{[]string{"run", "-H", "gpu01", "--exclude=g"}, []string{"--exclude=gpu01"}},
		{[]string{"run", "--hosts", "nosuch.yaml", "--exclude", ""}, nil},
	} {
		if head, got := completeWords(t, c.args...); head != "words\t" || !slices.Equal(got, c.want) {
			t.Errorf("%q: %q %q, want %q", c.args, head, got, c.want)
		}
	}
	t.Setenv("TFHIVE_HOSTS", "other.yaml")
	if _, got := completeWords(t, "plan", "--exclude", ""); !slices.Equal(got, []string{"gpu05"}) {
		t.Errorf("$TFHIVE_HOSTS: %q", got)
	}
}

// Without hosts, run ids come from this machine's claims (none here: the
// claims directory is the test's own) and from ./tfhive-runs.
func TestCompleteRunIDsFromLogRoot(t *testing.T) {
	dir := isolate(t)
	t.Setenv("TFHIVE_CLAIMS_DIR", dir)
	for _, d := range []string{"tfhive-runs/here-1", "tfhive-runs/ended-1", "tfhive-runs/bad id", "tfhive-runs/-x"} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile("tfhive-runs/ended-1/summary.json", []byte("{}"), 0o644)
	os.WriteFile("tfhive-runs/file-1", nil, 0o644)
	err, stdout, stderr := tfhive(t, "__complete", "kill", "")
	if want := "words\t\nhere-1\tlog in tfhive-runs/here-1\n"; err != nil || stdout != want || stderr != "" {
		t.Errorf("kill: %v\n%q\nwant\n%q\nstderr %q", err, stdout, want, stderr)
	}
	if _, got := completeWords(t, "kill", "e"); got != nil {
		t.Errorf("ended runs offered to kill: %q", got)
	}
	// attach, logs and wait take any run with its logs here, ended or not.
	for _, cmd := range []string{"attach", "logs", "wait"} {
		if _, got := completeWords(t, cmd, "e"); len(got) != 1 || got[0] != "ended-1" {
			t.Errorf("%s e: %q, want ended-1", cmd, got)
		}
	}
}

// --capture-from offers the tasks the line asks for; runs --sort the
// metrics of the log root's runs.
func TestCompleteCaptureFromAndSort(t *testing.T) {
	dir := isolate(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--capture-from", ""}, []string{"worker:0"}},
		{[]string{"run", "--ps", "1", "--workers", "2", "--chief", "--evaluator", "--capture-from", ""},
			[]string{"ps:0", "chief:0", "worker:0", "worker:1", "evaluator:0"}},
		{[]string{"run", "--workers=3", "--chief=false", "--capture-from=worker:"}, []string{"--capture-from=worker:0", "--capture-from=worker:1", "--capture-from=worker:2"}},
		// attach -H learns the tasks from the hosts.
		{[]string{"attach", "-H", "h", "--capture-from", ""}, nil},
		{[]string{"runs", "--sort", ""}, nil},
	} {
		if head, got := completeWords(t, c.args...); head != "words\t" || !slices.Equal(got, c.want) {
			t.Errorf("%q: %q %q, want %q", c.args, head, got, c.want)
		}
	}
	for id, metrics := range map[string]string{"a": `"loss": "1"`, "b": `"acc": "2"`} {
		os.MkdirAll(filepath.Join("tfhive-runs", id), 0o755)
		os.WriteFile(filepath.Join("tfhive-runs", id, rundir.Summary), []byte(`{"result": "succeeded", "metrics": {`+metrics+`}}`), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "elsewhere", "c"), 0o755)
	os.WriteFile(filepath.Join(dir, "elsewhere", "c", rundir.Summary), []byte(`{"result": "failed", "metrics": {"lr": "2"}}`), 0o644)
	if _, got := completeWords(t, "runs", "--sort", ""); !slices.Equal(got, []string{"acc", "loss"}) {
		t.Errorf("runs --sort: %q", got)
	}
	if _, got := completeWords(t, "runs", "--log-root", "elsewhere", "--sort", "l"); !slices.Equal(got, []string{"lr"}) {
		t.Errorf("runs --log-root elsewhere --sort l: %q", got)
	}
}

func TestCompletionScriptCommand(t *testing.T) {
	isolate(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		err, stdout, stderr := tfhive(t, "completion", sh)
		if err != nil || stderr != "" || !strings.Contains(stdout, "tfhive __complete") {
			t.Errorf("completion %s: %v, stderr %q\n%s", sh, err, stderr, stdout)
		}
	}
	hint := "tfhive: hint: tfhive completion takes one of bash, zsh, fish"
	wantUsage(t, []string{"completion"}, "tfhive: error: completion needs a shell", hint)
	wantUsage(t, []string{"completion", "tcsh"}, `tfhive: error: no completion for shell "tcsh"`, hint)
	wantUsage(t, []string{"completion", "bash", "zsh"}, `tfhive: error: unexpected argument "zsh"`, "tfhive: hint: see `tfhive completion --help`")
	// The hidden command stays out of help and of suggestions.
	var help bytes.Buffer
	Run([]string{"tfhive", "--help"}, strings.NewReader(""), &help, &help)
	if strings.Contains(help.String(), "__complete") || !regexp.MustCompile(`completion +print`).MatchString(help.String()) {
		t.Errorf("help:\n%s", help.String())
	}
	wantUsage(t, []string{"__complet"}, `tfhive: error: unknown command "__complet"`)
}
