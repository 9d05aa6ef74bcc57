package e2e

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// completionBed is a place to complete tfhive command lines in real
// shells, with the binary on PATH: a fleet where run live-run holds
// claims, and a working directory whose ./tfhive-runs has the log dirs of
// a run started here and not ended (here-unended) and of one that ended.
// hostsArgs name a hosts file with the fleet and a host that never
// answers, and --connect-timeout 1h: completion must still answer, within
// its own bound, with what the others said.
type completionBed struct {
	env       []string
	dir       string
	hostsArgs string
	sshConfig string
}

func newCompletionBed(t *testing.T) *completionBed {
	f := runFleet(t, "c1", "c2")
	args, _ := runArgs(t, f, "--name", "live-run", "--workers", "2", "--", "sh", "-c", "echo started; exec sleep 300")
	startRun(t, f, args...)
	waitForClaims(t, f, 2)

	dir := t.TempDir()
	for _, d := range []string{"here-unended", "here-ended"} {
		if err := os.MkdirAll(filepath.Join(dir, "tfhive-runs", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "tfhive-runs", "here-ended", "summary.json"), []byte("{}"), 0o644)
	silent, err := net.Listen("tcp", "127.0.0.1:0") // the kernel accepts; nobody speaks
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	port := strconv.Itoa(silent.Addr().(*net.TCPAddr).Port)
	hosts := filepath.Join(dir, "fleet.yaml")
	os.WriteFile(hosts, []byte("hosts:\n  - c1\n  - c2\n  - address: 127.0.0.1\n    port: "+port+"\n"), 0o644)

	env := f.Env()
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + filepath.Dir(tfhiveBin) + ":" + kv[len("PATH="):]
		}
	}
	return &completionBed{
		env: env, dir: dir, sshConfig: f.SSHConfig,
		hostsArgs: "--hosts " + hosts + " --ssh-config " + f.SSHConfig + " --connect-timeout 1h",
	}
}

// shell runs a shell script in the bed and returns its output lines,
// failing on anything written to stderr: completion must never print
// errors into the user's command line.
func (b *completionBed) shell(t *testing.T, env []string, argv ...string) []string {
	t.Helper()
	if _, err := exec.LookPath(argv[0]); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI", argv[0])
		}
		t.Skipf("no %s here", argv[0])
	}
	// A hung completion ends the test, and says so, instead of hanging it.
	cmd := exec.Command("timeout", append([]string{"60"}, argv...)...)
	cmd.Env, cmd.Dir = append(slices.Clip(b.env), env...), b.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("%s: %v\nstderr:\n%s\nstdout:\n%s", argv[0], err, errb.String(), out.String())
	}
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// bashScript completes one command line as bash's programmable
// completion would: COMP_WORDS (split at = and : as bash splits them)
// and COMP_CWORD, COMP_LINE, COMP_POINT, then the completion function.
const bashScript = `
[[ -z $WITH_BASH_COMPLETION ]] || source /usr/share/bash-completion/bash_completion || exit 1
source <(tfhive completion bash) || exit 1
[[ $(complete -p tfhive) == "complete -F _tfhive tfhive" ]] || exit 1
if [[ -n $WITH_BASH_COMPLETION ]] && ! declare -F _get_comp_words_by_ref >/dev/null; then
	echo "bash-completion did not load" >&2
	exit 1
fi
COMP_LINE=$LINE COMP_POINT=${#LINE}
COMP_WORDS=("$@") COMP_CWORD=$(($# - 1))
_tfhive
printf '%s\n' "${COMPREPLY[@]}"
`

func TestCompletionBash(t *testing.T) {
	b := newCompletionBed(t)
	kill := "tfhive kill " + b.hostsArgs + " "
	for _, c := range []struct {
		line  string
		words []string // COMP_WORDS, when bash splits LINE at more than spaces
		want  []string // sorted
	}{
		// Live runs from the hosts' claims, and the run started here whose
		// log dir has no summary; not the ended one.
		{kill, nil, []string{"here-unended", "live-run"}},
		{kill + "h", nil, []string{"here-unended"}},
		{"tfhive stat", nil, []string{"status"}},
		{"tfhive run --worke", nil, []string{"--workers"}},
		{"tfhive run --wo", nil, []string{"--workdir", "--workers"}},
		{"tfhive status --ssh-config " + b.sshConfig + " -H ", nil, []string{"c1", "c2"}},
		{"tfhive status --ssh-config " + b.sshConfig + " -H me@c", nil, []string{"me@c1", "me@c2"}},
		{"tfhive status --hosts=fle", []string{"tfhive", "status", "--hosts", "=", "fle"}, []string{"fleet.yaml"}},
		{"tfhive status " + b.hostsArgs + " --exclude=c", append(strings.Fields("tfhive status "+b.hostsArgs), "--exclude", "=", "c"), []string{"c1", "c2"}},
	} {
		words := c.words
		if words == nil {
			words = strings.Split(c.line, " ")
		}
		for _, mode := range []string{"", "bash-completion"} {
			if mode != "" {
				if _, err := os.Stat("/usr/share/bash-completion/bash_completion"); err != nil && os.Getenv("CI") != "true" {
					continue // CI installs it (.ci/run)
				}
			}
			env := []string{"LINE=" + c.line, "WITH_BASH_COMPLETION=" + mode}
			got := b.shell(t, env, append([]string{"bash", "--norc", "--noprofile", "-c", bashScript, "bash"}, words...)...)
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("bash %s [%s]: %q, want %q", mode, c.line, got, c.want)
			}
		}
	}
}

func TestCompletionFish(t *testing.T) {
	b := newCompletionBed(t)
	for _, c := range []struct {
		line string
		want []string // word<tab>description, sorted
	}{
		{"tfhive kill " + b.hostsArgs + " ", []string{"here-unended\tlog in tfhive-runs/here-unended", "live-run\trunning: " + currentUserName(t) + " on c1, " + currentUserName(t) + " on c2"}},
		{"tfhive stat", []string{"status\tshow every GPU on every host"}},
		{"tfhive run --worke", []string{"--workers\tN worker tasks"}},
		{"tfhive status --hosts=fle", []string{"--hosts=fleet.yaml"}},
	} {
		got := b.shell(t, nil, "fish", "--no-config", "-c", "tfhive completion fish | source; complete -C $argv[1]", c.line)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("fish [%s]: %q, want %q", c.line, got, c.want)
		}
	}
}

// zsh is driven for real: an interactive zsh on a pseudo-terminal (zsh's
// own zpty), the script installed in $fpath as `tfhive help
// shell-completion` says, compinit, and a Tab typed after the line. Its
// output is read until the expected words show, in order; timeout ends a
// zsh that never shows them.
const zshScript = `
zmodload zsh/zpty || exit 1
mkdir -p fpath && tfhive completion zsh >fpath/_tfhive || exit 1
zpty z zsh -f -i
zpty -w z 'PS1="> "; fpath=($PWD/fpath $fpath); autoload -Uz compinit; compinit -u -D; print READY'
zpty -r z line '*READY*'
zpty -w -n z "$1"$'\t'
zpty -r z out "$2" && print -r -- FOUND
zpty -d z
`

func TestCompletionZsh(t *testing.T) {
	b := newCompletionBed(t)
	for _, c := range []struct{ line, pattern string }{
		// Two candidates: zsh lists them, with their descriptions.
		{"tfhive kill " + b.hostsArgs + " ", "*here-unended*--*log in tfhive-runs/here-unended*live-run*--*running: *"},
		// One: zsh puts it on the line.
		{"tfhive stat", "*tfhive status*"},
		{"tfhive run --worke", "*tfhive run --workers*"},
	} {
		if got := b.shell(t, nil, "zsh", "-f", "-c", zshScript, "zsh", c.line, c.pattern); !slices.Equal(got, []string{"FOUND"}) {
			t.Errorf("zsh [%s]: %q", c.line, got)
		}
	}
}

func currentUserName(t *testing.T) string {
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
