package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/remote/shscript"
)

const ledgerStart = 1764600000

// ledger runs ledger.sh's tfhive_ledger for one 2-GPU attempt into dir,
// in a bash of its own with env added (a colleague's stat, first on
// PATH, who acts while the ledger is written).
func ledger(t *testing.T, dir string, env ...string) {
	t.Helper()
	script := shscript.Load(Scripts, "scripts/ledger.sh").Text() +
		"\ntfhive_ledger \"$1\" r1 worker:0 cpu:0,gpu:0,gpu:1 \"$2\" \"$2\" 40"
	cmd := exec.Command("bash", "--norc", "-c", script, "test", dir, strconv.Itoa(ledgerStart))
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("%v: %s", err, out)
	}
}

// ledgerFile is the test user's ledger for ledgerStart's month in dir.
func ledgerFile(dir string) string {
	return filepath.Join(dir, "tfhive-usage."+strconv.Itoa(os.Getuid())+"."+time.Unix(ledgerStart, 0).Format("2006-01")+".csv")
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The user's own ledger is made 0644 and appended to: one line per
// attempt, its idle tenths of a second made GPU-seconds.
func TestLedgerAppends(t *testing.T) {
	dir := t.TempDir()
	ledger(t, dir)
	ledger(t, dir)
	const line = "1 1764600000 1764600000 2 8 r1 worker:0\n"
	if got := readFile(t, ledgerFile(dir)); got != line+line {
		t.Errorf("%q", got)
	}
	if st, err := os.Stat(ledgerFile(dir)); err != nil || st.Mode() != 0o644 {
		t.Errorf("%v %v", st.Mode(), err)
	}
	// A full month's file (1 MiB) takes no more.
	if err := os.WriteFile(ledgerFile(dir), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	ledger(t, dir)
	if st, _ := os.Stat(ledgerFile(dir)); st.Size() != 1<<20 {
		t.Errorf("a full ledger grew to %d", st.Size())
	}
}

// A link planted at the ledger's name, to a file of the user's or to a
// name not there yet, or a second name of one of their files, is not
// written through, and makes nothing.
func TestLedgerWritesThroughNoLink(t *testing.T) {
	for _, plant := range []string{"symlink", "dangling", "hardlink"} {
		t.Run(plant, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			switch plant {
			case "symlink":
				err = os.Symlink(victim, ledgerFile(dir))
			case "dangling":
				err = os.Symlink(victim+".new", ledgerFile(dir))
			case "hardlink":
				victim = filepath.Join(dir, "victim")
				if err = os.WriteFile(victim, []byte("mine\n"), 0o644); err == nil {
					err = os.Link(victim, ledgerFile(dir))
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			ledger(t, dir)
			if got := readFile(t, victim); got != "mine\n" {
				t.Errorf("written through the %s: %q", plant, got)
			}
			if _, err := os.Lstat(victim + ".new"); err == nil {
				t.Errorf("a file was made through the dangling link")
			}
		})
	}
}

// A link put in the ledger's place while it is being written (here when
// ledger.sh runs stat, as a colleague racing it would) is not followed:
// what was opened and checked is what is written.
func TestLedgerRaceWithAPlantedLink(t *testing.T) {
	dir, bin := t.TempDir(), t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ledger(t, dir)
	real, err := exec.LookPath("stat")
	if err != nil {
		t.Skip("no stat")
	}
	swap := "#!/bin/sh\nrm -f \"$LEDGER\" && ln -s \"$VICTIM\" \"$LEDGER\"\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "stat"), []byte(swap), 0o755); err != nil {
		t.Fatal(err)
	}
	ledger(t, dir, "PATH="+bin+":"+os.Getenv("PATH"), "LEDGER="+ledgerFile(dir), "VICTIM="+victim)
	if got := readFile(t, victim); got != "mine\n" {
		t.Errorf("written through a link planted mid-write: %q", got)
	}
}
