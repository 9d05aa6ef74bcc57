package hostops

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// The holder's lines, however split: held once, then a wake per change,
// none lost to a full channel (one pending wake is enough).
func TestTicketLines(t *testing.T) {
	held, wake := make(chan struct{}), make(chan struct{}, 1)
	w := &ticketLines{held: held, wake: wake}
	out := "noise\n@@tfhive-ticket he" + "ld\n@@tfhive-chan" + "ged\n@@tfhive-changed\n"
	for _, c := range []string{out[:10], out[10:20], out[20:35], out[35:]} {
		w.Write([]byte(c))
	}
	select {
	case <-held:
	default:
		t.Fatal("held not closed")
	}
	select {
	case <-wake:
	default:
		t.Fatal("no wake")
	}
	w.Write([]byte("@@tfhive-changed\n"))
	select {
	case <-wake:
	default:
		t.Fatal("no wake for a later change")
	}
}

// ticket.sh's holder, run here: it holds its lock file, says a lock
// taken on the machine changed things, and removes its file at EOF.
func TestTicketScriptSaysChanged(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	script := ticketSh.With(shscript.Set("tfhive_kind", "ticket"), shscript.Set("tfhive_name", "1.2.r1"),
		shscript.Set("tfhive_label", "r1 normal 2 1"))
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "TFHIVE_CLAIMS_DIR="+dir)
	stdin, _ := cmd.StdinPipe()
	held, wake := make(chan struct{}), make(chan struct{}, 1)
	cmd.Stdout = &ticketLines{held: held, wake: wake}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the ticket was never held")
	}
	if _, err := os.Stat(filepath.Join(dir, "tfhive-ticket.1.2.r1.lock")); err != nil {
		t.Fatal(err)
	}
	// A lock taken elsewhere on the machine: /proc/locks changes.
	f, err := os.Create(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatal("no @@tfhive-changed after a lock was taken")
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tfhive-ticket.1.2.r1.lock")); !os.IsNotExist(err) {
		t.Errorf("the ticket file is still there: %v", err)
	}
}

// A request's name taken already: the script names the file's owner; a
// name that is no login name reads "-"; a lock held says nothing of it.
func TestTicketLinesTakenBy(t *testing.T) {
	for out, want := range map[string]string{
		"@@tfhive-ticket refused exists mallory\n":   "mallory",
		"@@tfhive-ticket refused exists \x1b[2J\n":   "-",
		"@@tfhive-ticket refused exists\n":           "",
		"@@tfhive-ticket held\n":                     "",
		"banner\n@@tfhive-ticket refused exists -\n": "-",
	} {
		w := &ticketLines{held: make(chan struct{})}
		w.Write([]byte(out))
		if got := w.takenBy(); got != want {
			t.Errorf("%q: taken by %q, want %q", out, got, want)
		}
	}
}

// A name made first by anyone: the script takes nothing and says whose
// the file is.
func TestTicketScriptNamesPremadeOwner(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tfhive-preempt.h.l.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	script := ticketSh.With(shscript.Set("tfhive_kind", "preempt"), shscript.Set("tfhive_name", "h.l"), shscript.Set("tfhive_label", "h l"))
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "TFHIVE_CLAIMS_DIR="+dir)
	w := &ticketLines{held: make(chan struct{})}
	cmd.Stdout = w
	err := cmd.Run()
	if cmd.ProcessState.ExitCode() != 75 {
		t.Fatalf("exit: %v", err)
	}
	me, _ := exec.Command("id", "-un").Output()
	if got := w.takenBy(); got != strings.TrimSpace(string(me)) {
		t.Errorf("taken by %q, want %q", got, me)
	}
}
