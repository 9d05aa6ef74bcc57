package supervisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/remote/shscript"
)

const ledgerStart = 1764600000

// ledger runs ledger.sh's tfhive_ledger for one 2-GPU attempt into dir,
// in a bash of its own with env added (a colleague's dd, first on PATH,
// who acts while the ledger is written), and gives what it said on its
// stderr. A ledger that blocks it fails the test: the supervisor would
// never end.
func ledger(t *testing.T, dir string, env ...string) string {
	t.Helper()
	script := shscript.Load(Scripts, "scripts/ledger.sh").Text() +
		"\ntfhive_mark=M\ntfhive_ledger \"$1\" r1 worker:0 cpu:0,gpu:0,gpu:1 \"$2\" \"$2\" 40"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--norc", "-c", script, "test", dir, strconv.Itoa(ledgerStart))
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("tfhive_ledger blocked: %s", out)
	}
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return string(out)
}

// ledgerDir is the test user's directory of ledgers in dir, ledgerFile
// its ledger for ledgerStart's month (UTC).
func ledgerDir(dir string) string {
	return filepath.Join(dir, "tfhive-usage."+strconv.Itoa(os.Getuid()))
}

func ledgerFile(dir string) string {
	return filepath.Join(ledgerDir(dir), time.Unix(ledgerStart, 0).UTC().Format("2006-01")+".csv")
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantRefused checks that the ledger said why it left the attempt out,
// on one line of its own, naming what.
func wantRefused(t *testing.T, said, what string) {
	t.Helper()
	if !strings.HasPrefix(said, "@@tfhive-idle M ledger ") || !strings.Contains(said, what) || strings.Count(said, "\n") != 1 {
		t.Errorf("said %q, want a ledger line naming %q", said, what)
	}
}

// The user's own directory of ledgers is made 0755, its month's ledger
// 0644, and appended to: one line per attempt, its idle tenths of a
// second made GPU-seconds.
func TestLedgerAppends(t *testing.T) {
	dir := t.TempDir()
	for range 2 {
		if said := ledger(t, dir); said != "" {
			t.Errorf("said %q", said)
		}
	}
	const line = "1 1764600000 1764600000 2 8 r1 worker:0\n"
	if got := readFile(t, ledgerFile(dir)); got != line+line {
		t.Errorf("%q", got)
	}
	if st, err := os.Lstat(ledgerDir(dir)); err != nil || st.Mode() != os.ModeDir|0o755 {
		t.Errorf("%v %v", st.Mode(), err)
	}
	if st, err := os.Stat(ledgerFile(dir)); err != nil || st.Mode() != 0o644 {
		t.Errorf("%v %v", st.Mode(), err)
	}
	// A full month's file (1 MiB) takes no more, and says so; nor does
	// one a line would take past 1 MiB (a reader would refuse it whole).
	for _, size := range []int{1 << 20, 1<<20 - 10} {
		if err := os.WriteFile(ledgerFile(dir), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, ledger(t, dir), "is full")
		if st, _ := os.Stat(ledgerFile(dir)); st.Size() != int64(size) {
			t.Errorf("a ledger of %d grew to %d", size, st.Size())
		}
	}
}

// Anything at the directory's name that is not a real directory of the
// user's that nobody else may write (a FIFO, a file, a link to a
// directory, a directory others may write) is refused, said, never
// written into nor waited on; so are a FIFO or a link at the file's
// name.
func TestLedgerRefusesWhatItDidNotMake(t *testing.T) {
	for _, plant := range []string{"fifo", "file", "symlink", "writable", "file-fifo", "file-symlink"} {
		t.Run(plant, func(t *testing.T) {
			dir := t.TempDir()
			victim := t.TempDir()
			l, f := ledgerDir(dir), ledgerFile(dir)
			var err error
			switch plant {
			case "fifo":
				err = syscall.Mkfifo(l, 0o644)
			case "file":
				err = os.WriteFile(l, nil, 0o644)
			case "symlink":
				err = os.Symlink(victim, l)
			case "writable":
				if err = os.Mkdir(l, 0o755); err == nil {
					err = os.Chmod(l, 0o777)
				}
			case "file-fifo", "file-symlink":
				if err = os.Mkdir(l, 0o755); err != nil {
					break
				}
				if plant == "file-fifo" {
					err = syscall.Mkfifo(f, 0o644)
				} else {
					err = os.Symlink(filepath.Join(victim, "new"), f)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			what := l
			if strings.HasPrefix(plant, "file-") {
				what = f
			}
			wantRefused(t, ledger(t, dir), what)
			if ents, _ := os.ReadDir(victim); len(ents) != 0 {
				t.Errorf("written through the %s: %v", plant, ents)
			}
			if plant == "writable" {
				if _, err := os.Lstat(f); err == nil {
					t.Errorf("a ledger was written in a directory others may write")
				}
			}
		})
	}
}

// A FIFO at the old ledger's name in the claims directory (a colleague's
// plant: a guessable name in /tmp) is never opened: the attempt goes
// into the user's own directory at once.
func TestLedgerIgnoresAFIFOAtTheOldName(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "tfhive-usage."+strconv.Itoa(os.Getuid())+"."+time.Unix(ledgerStart, 0).Format("2006-01")+".csv")
	if err := syscall.Mkfifo(old, 0o666); err != nil {
		t.Fatal(err)
	}
	if said := ledger(t, dir); said != "" {
		t.Errorf("said %q", said)
	}
	if got := readFile(t, ledgerFile(dir)); got != "1 1764600000 1764600000 2 8 r1 worker:0\n" {
		t.Errorf("%q", got)
	}
}

// The file swapped for a link or a FIFO just before it is written (here
// when dd starts, by a wrapper first on PATH) is neither written through
// nor waited on: dd opens it with O_NOFOLLOW and O_NONBLOCK.
func TestLedgerOpensNoLinkAndNeverBlocks(t *testing.T) {
	real, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("no dd")
	}
	for _, swap := range []string{"ln -s \"$VICTIM\" \"$LEDGER\"", "mkfifo \"$LEDGER\""} {
		dir, bin := t.TempDir(), t.TempDir()
		victim := filepath.Join(t.TempDir(), "victim")
		if err := os.WriteFile(victim, []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ledger(t, dir)
		sh := "#!/bin/sh\nrm -f \"$LEDGER\" && " + swap + "\nexec " + real + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(bin, "dd"), []byte(sh), 0o755); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, ledger(t, dir, "PATH="+bin+":"+os.Getenv("PATH"), "LEDGER="+ledgerFile(dir), "VICTIM="+victim), "cannot append")
		if got := readFile(t, victim); got != "mine\n" {
			t.Errorf("written through a link planted mid-write: %q", got)
		}
	}
}

// Another user's directory at the user's name (root can make one here)
// is refused.
func TestLedgerRefusesAColleaguesDirectory(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to make a directory another user owns")
	}
	dir := t.TempDir()
	if err := os.Mkdir(ledgerDir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ledgerDir(dir), 4242, 4242); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, ledger(t, dir), "owned by uid 4242")
	if _, err := os.Lstat(ledgerFile(dir)); err == nil {
		t.Error("written into a colleague's directory")
	}
}
