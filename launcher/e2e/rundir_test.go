package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// A run directory on a host that is a symbolic link, has the wrong mode
// or is another user's is refused, never followed: the task could not
// start (exit 1), one line says which path and why, and nothing is
// written through the link.
func TestRunDirRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		// prepare readies the host's HOME and says which path is to be
		// named, and what about it.
		prepare func(t *testing.T, h *sshtest.Host, elsewhere string) (path, why string)
	}{
		{"runs a symbolic link", func(t *testing.T, h *sshtest.Host, elsewhere string) (string, string) {
			mkdir(t, filepath.Join(h.Home(), ".tfhive"), 0o700)
			runs := filepath.Dir(hostRunDir(h, "x"))
			if err := os.Symlink(elsewhere, runs); err != nil {
				t.Fatal(err)
			}
			return runs, "is a symbolic link"
		}},
		{".tfhive with mode 0755", func(t *testing.T, h *sshtest.Host, _ string) (string, string) {
			dir := filepath.Join(h.Home(), ".tfhive")
			mkdir(t, dir, 0o755)
			return dir, "has mode 0755, not 0700"
		}},
		{"runs another user's", func(t *testing.T, h *sshtest.Host, _ string) (string, string) {
			other := sshtest.AddUser(t, "other")
			mkdir(t, filepath.Join(h.Home(), ".tfhive"), 0o700)
			runs := filepath.Dir(hostRunDir(h, "x"))
			mkdir(t, runs, 0o700)
			if err := os.Chown(runs, other.UID, other.GID); err != nil {
				t.Fatal(err)
			}
			return runs, "is owned by " + other.Name + " (uid " + itoa(other.UID) + "), not by you"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := runFleet(t, "rd")
			elsewhere := t.TempDir()
			os.Chmod(elsewhere, 0o700)
			path, why := c.prepare(t, f.Host("rd"), elsewhere)
			args, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "0", "--", "echo", "ran")
			r := tfhive(t, f.Env(), f.Dir, args...)
			wantCode(t, r, 1)
			wantContains(t, "stderr", r.stderr, "could not start: "+path+" "+why+": tfhive keeps a run's files only in real directories of your own with mode 0700")
			wantContains(t, "console", r.stdout, "tfhive: worker:0 on rd could not start: "+path+" "+why, "not-started: "+path)
			if strings.Contains(r.stdout, "ran\n") || strings.Contains(r.stdout, "[worker:0 rd]") {
				t.Errorf("the task ran, or its supervisor's refusal passed for its output:\n%s", r.stdout)
			}
			if left, _ := os.ReadDir(elsewhere); len(left) != 0 {
				t.Errorf("written through the link: %v", left)
			}
			noLeftovers(t, f, 10*time.Second)
		})
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// A host whose disk fills up while a task writes: the task and its
// supervisor go on (the task exits 0, the run succeeds, nothing hangs);
// the console and the local log have every byte the host's file took,
// as the client follows that file, and the summary says the log was
// truncated.
func TestRunDiskFull(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "full", GPU: "idle-2gpu.xml", AliveInterval: 1, HomeSize: 256 << 10})
	const lines = 200000 // 1.3 MB: five times the disk
	args, logDir := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "0", "--timeout", "2m",
		"--", "sh", "-c", `seq 1 "$1"; echo after >&2`, "w", itoa(lines))
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	w := taskByID(summaryOf(t, logDir), "worker:0")
	if w.Outcome != "exited" || w.ExitCode == nil || *w.ExitCode != 0 || !w.LogTruncated {
		t.Errorf("worker:0: %s %s, log truncated %v; want exited 0, truncated", w.Outcome, codeOf(w), w.LogTruncated)
	}
	wantContains(t, "summary", r.stdout, "exited 0 (host log truncated: disk full)")

	sameAsHost(t, f.Host("full"), logDir, r.stdout, lines)
	noLeftovers(t, f, 10*time.Second)

	// A home full before the run starts: its task could not start, and
	// the line says why as the system does (before, "cannot create …"
	// and nothing of the disk).
	fill, err := os.Create(filepath.Join(f.Host("full").Home(), "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = fill.Write(make([]byte, 64<<10))
	}
	fill.Close()
	if !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("filling the home: %v", err)
	}
	args, _ = runArgs(t, f, "--workers", "1", "--gpus-per-worker", "0", "--", "echo", "ran")
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, "worker:0 on full could not start: ", ": no space left on device")
	noLeftovers(t, f, 10*time.Second)
}

// The same when the disk filled under one session and the task ended
// under a later one: followed again once its host is back, or after its
// end, the task's new session says it too.
func TestRunDiskFullAcrossReconnect(t *testing.T) {
	for _, c := range []struct {
		name string
		// away cuts the link and makes the task end: a file's creation
		// ends it.
		away func(t *testing.T, r *running, h *sshtest.Host, end func())
	}{
		{"ended while followed again", func(t *testing.T, r *running, h *sshtest.Host, end func()) {
			h.Proxy.Reset()
			if !r.readUntil(func(line string) bool { return strings.HasPrefix(line, "tfhive: full is back after") }) {
				t.Fatalf("tfhive ended before the host was back: %s", r.other.String())
			}
			end()
		}},
		{"ended while away", func(t *testing.T, r *running, h *sshtest.Host, end func()) {
			h.Proxy.Pause()
			if !r.readUntil(func(line string) bool { return strings.HasPrefix(line, "tfhive: lost the connection to full") }) {
				t.Fatalf("tfhive ended before it lost the host: %s", r.other.String())
			}
			end()
			waitFor(t, 30*time.Second, "the task's status on the host", func() bool {
				rc, _ := filepath.Glob(filepath.Join(hostRunDir(h, "*"), "worker-0.rc"))
				return len(rc) == 1 && strings.TrimSpace(readFile(t, rc[0])) == "0 truncated"
			})
			h.Proxy.Resume()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := sshtest.Start(t, sshtest.Profile{Name: "full", GPU: "idle-2gpu.xml", AliveInterval: 1, Proxied: true, HomeSize: 256 << 10})
			const lines = 200000
			flag := filepath.Join(t.TempDir(), "end")
			args, logDir := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "0", "--reconnect", "2m",
				"--", "sh", "-c", `seq 1 "$1"; while [ ! -e "$2" ]; do sleep 0.05; done`, "w", itoa(lines), flag)
			r := startTfhive(t, f, readStdout, args...)
			if !r.readUntil(func(line string) bool { return line == "[worker:0 full] 1000" }) {
				r.Wait()
				t.Fatalf("tfhive ended before the task's output: %s", r.other.String())
			}
			c.away(t, r, f.Host("full"), func() {
				if err := os.WriteFile(flag, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			})
			r.readAll()
			if err := r.Wait(); err != nil {
				t.Fatalf("tfhive: %v\nstderr:\n%s", err, r.other.String())
			}
			if w := taskByID(summaryOf(t, logDir), "worker:0"); w.Outcome != "exited" || w.ExitCode == nil || *w.ExitCode != 0 || !w.LogTruncated {
				t.Errorf("worker:0: %s %s, log truncated %v; want exited 0, truncated", w.Outcome, codeOf(w), w.LogTruncated)
			}
			sameAsHost(t, f.Host("full"), logDir, r.read.String(), lines)
			noLeftovers(t, f, 10*time.Second)
		})
	}
}

// sameAsHost checks that worker:0's file on h was cut short of the n
// lines the task wrote, and that the local log holds exactly its bytes
// and the console its lines, in order, once each (the last one may be
// cut where the disk filled).
func sameAsHost(t *testing.T, h *sshtest.Host, logDir, console string, n int) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(hostRunDir(h, "*"), "worker-0.out"))
	if len(files) != 1 {
		t.Fatalf("the task's file on the host: %v", files)
	}
	onHost, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	local, err := os.ReadFile(filepath.Join(logDir, "worker-0.log"))
	if err != nil {
		t.Fatal(err)
	}
	whole := len(strings.Join(seqLines(n), "\n")) + 1
	if len(onHost) < 64<<10 || len(onHost) >= whole {
		t.Fatalf("the host's file holds %d bytes of the task's %d: the disk did not fill, or filled too early", len(onHost), whole)
	}
	if !bytes.Equal(local, onHost) {
		i := 0
		for i < len(local) && i < len(onHost) && local[i] == onHost[i] {
			i++
		}
		t.Fatalf("the local log (%d bytes) is not the host's file (%d bytes): from byte %d, the log has %q, the host %q",
			len(local), len(onHost), i, around(local, i), around(onHost, i))
	}
	want := strings.Split(string(onHost), "\n")
	if want[len(want)-1] == "" {
		want = want[:len(want)-1]
	}
	for i, l := range want[:len(want)-1] {
		if l != itoa(i+1) {
			t.Fatalf("line %d of the host's file is %q", i+1, l)
		}
	}
	var got []string
	for _, line := range strings.Split(console, "\n") {
		if l, ok := strings.CutPrefix(line, "[worker:0 "+h.Name+"] "); ok {
			got = append(got, l)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the console shows %d lines of the task, the host's file %d", len(got), len(want))
	}
}

// around is up to 200 bytes of b from i.
func around(b []byte, i int) []byte { return b[i:min(len(b), i+200)] }

func codeOf(tr record.TaskResult) string {
	if tr.ExitCode == nil {
		return "(no code)"
	}
	return itoa(*tr.ExitCode)
}

func seqLines(n int) []string {
	l := make([]string, n)
	for i := range l {
		l[i] = itoa(i + 1)
	}
	return l
}
