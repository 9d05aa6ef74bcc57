package usage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

// What a host's script said, in a call whose secret is "s3cret":
// alice's ledger, with a line past the file's last write (forged), one
// with more GPUs than the host has, one that does not parse and one whose
// idle time is more than it held; bob's refused; the users' names.
const hostOut = `@@tfhive-usage s3cret now 1764700000
@@tfhive-usage s3cret ledger 1001 1764690000 300 tfhive-usage.1001.2025-12.csv
L 1 1764600000 1764603600 2 3600 r1 worker:0
L 1 1764603600 1764607200 1 7200 r2 worker:0
L 1 1764607200 1764699999 1 0 r3 worker:0
L 1 1764600000 1764603600 9 0 r4 worker:0
L 1 x 1764603600 1 0 r5 worker:0
@@tfhive-usage s3cret refused tfhive-usage.1002.2025-12.csv owned by uid 1001, not 1002
@@tfhive-usage s3cret ledger 1003 1764690000 300 tfhive-usage.1003.2025-12.csv
L 1 1764500000 1764507200 1 3600 r9 chief:0
@@tfhive-usage s3cret users
U alice:x:1001:1001::/home/alice:/bin/bash
`

func TestParseBelievesOnlyWhatItCanProve(t *testing.T) {
	h := Parse("g1", hostOut, "s3cret", 4)
	if len(h.Entries) != 3 || h.Dropped != 3 || len(h.Refused) != 1 || h.Overflow != "" {
		t.Fatalf("%+v", h)
	}
	if e := h.Entries[1]; e.User != "alice" || e.IdleGPUSeconds != 3600 || e.GPUs != 1 || e.Run != "r2" {
		t.Errorf("idle is bounded by the time held: %+v", e)
	}
	if e := h.Entries[2]; e.User != "uid 1003" || e.Task != "chief:0" {
		t.Errorf("a uid with no name: %+v", e)
	}
}

// Mallory (uid 1003) writes tfhive's own lines into her ledger, with the
// old markers and with a guessed secret: another ledger header for
// alice's uid with lines after it, a users block that names her uid
// root, and a refusal. Each is one of her own lines (that proves
// nothing), never alice's hours nor a new name.
func TestParseAForgedLedgerIsItsOwnersAlone(t *testing.T) {
	const out = `@@tfhive-usage s3cret now 1764700000
@@tfhive-usage s3cret ledger 1003 1764690000 300 tfhive-usage.1003.2025-12.csv
L 1 1764500000 1764503600 1 0 real chief:0
L @@tfhive-ledger 1001 1764690000 300 tfhive-usage.1001.2025-12.csv
L @@tfhive-usage s3cret ledger 1001 1764690000 300 tfhive-usage.1001.2025-12.csv
L 1 1764600000 1764603600 2 0 forged worker:0
L @@tfhive-users
L @@tfhive-usage s3cret users
L U root:x:1003:0::/root:/bin/bash
L root:x:1003:0::/root:/bin/bash
L @@tfhive-usage s3cret refused tfhive-usage.1001.2025-12.csv forged
@@tfhive-usage guess ledger 1001 1764690000 300 tfhive-usage.1001.2025-12.csv
1 1764600000 1764603600 2 0 raw worker:0
L 1 1764600000 1764603600 2 0 raw worker:0
@@tfhive-usage s3cret users
U mallory:x:1003:1003::/home/mallory:/bin/bash
`
	h := Parse("g1", out, "s3cret", 4)
	if len(h.Refused) != 0 || h.Dropped != 7 || len(h.Entries) != 3 {
		t.Fatalf("%+v", h)
	}
	for _, e := range h.Entries {
		if e.User != "mallory" {
			t.Errorf("counted as %s's: %+v", e.User, e)
		}
	}
}

// runScript runs usage.sh on dir as the claims directory, for ledgers
// since since; a script that does not end within 20 s fails the test.
func runScript(t *testing.T, dir string, since time.Time) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--norc", "-s")
	cmd.Stdin = strings.NewReader(Script(since, "s3cret"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TFHIVE_CLAIMS_DIR=" + dir}
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("usage.sh blocked: %s", out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// writeLedger writes a ledger at p (its directories made 0755), last
// written at 1764690000.
func writeLedger(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1764690000, 0)
	os.Chtimes(p, mtime, mtime)
}

// usage.sh on the user's directory of ledgers and an older tfhive's
// ledger beside it, each without its final newline: each ledger's lines
// are its own, none runs into the next's header.
func TestScriptKeepsLedgersApart(t *testing.T) {
	dir := t.TempDir()
	me := strconv.Itoa(os.Getuid())
	for _, m := range []string{"2025-11", "2025-12", "2026-01"} {
		writeLedger(t, filepath.Join(dir, "tfhive-usage."+me, m+".csv"), "1 1764600000 1764603600 1 0 r-"+m+" worker:0\n1 1764600000 1764603600 1 0 r2-"+m+" worker:0")
	}
	writeLedger(t, filepath.Join(dir, "tfhive-usage."+me+".2025-12.csv"), "1 1764600000 1764603600 1 0 old worker:0")
	out := runScript(t, dir, time.Date(2025, 11, 20, 0, 0, 0, 0, time.UTC))
	h := Parse("g1", out, "s3cret", 4)
	if len(h.Entries) != 7 || h.Dropped != 0 || h.Overflow != "" || len(h.Refused) != 0 {
		t.Errorf("%+v\n%s", h, out)
	}
}

// What anyone but the ledger's owner could have made or changed is
// refused, named, and never opened: a user's directory others may write
// or that is not a directory (a FIFO, a link to the owner's real
// directory), and, in a directory of the owner's, a ledger others may
// write or that is a FIFO or a link.
func TestScriptRefusesWhatOthersCouldHavePrepared(t *testing.T) {
	me := strconv.Itoa(os.Getuid())
	const line = "1 1764600000 1764603600 1 0 r worker:0\n"
	for name, plant := range map[string]func(dir, l, f string) error{
		"writable directory": func(dir, l, f string) error {
			writeLedger(t, f, line)
			return os.Chmod(l, 0o777)
		},
		"fifo directory": func(dir, l, f string) error { return syscall.Mkfifo(l, 0o644) },
		"linked directory": func(dir, l, f string) error {
			real := filepath.Join(t.TempDir(), "real")
			writeLedger(t, filepath.Join(real, filepath.Base(f)), line)
			return os.Symlink(real, l)
		},
		"writable ledger": func(dir, l, f string) error {
			writeLedger(t, f, line)
			return os.Chmod(f, 0o666)
		},
		"fifo ledger": func(dir, l, f string) error {
			if err := os.Mkdir(l, 0o755); err != nil {
				return err
			}
			return syscall.Mkfifo(f, 0o644)
		},
		"linked ledger": func(dir, l, f string) error {
			real := filepath.Join(l, "real")
			writeLedger(t, real, line)
			return os.Symlink(real, f)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := filepath.Join(dir, "tfhive-usage."+me)
			if err := plant(dir, l, filepath.Join(l, "2025-12.csv")); err != nil {
				t.Fatal(err)
			}
			out := runScript(t, dir, time.Date(2025, 12, 2, 0, 0, 0, 0, time.UTC))
			h := Parse("g1", out, "s3cret", 4)
			if len(h.Entries) != 0 || len(h.Refused) != 1 || !strings.HasPrefix(h.Refused[0], "tfhive-usage."+me) {
				t.Errorf("%+v\n%s", h, out)
			}
		})
	}
}

// chownAll gives each path to uid; a test that cannot (not root) is
// skipped.
func chownAll(t *testing.T, uid int, paths ...string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to make files of another user's")
	}
	for _, p := range paths {
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}

// A colleague (uid 4242) who fills the claims directory with 1025 names
// (refused: they are not hers) spends only her own bound: 64 of her
// names are looked at and she is said to be crowded; another user's
// ledger is read whatever the order, and the host's answer is whole.
func TestScriptBoundsAreEachOwnersOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("1025 files")
	}
	dir := t.TempDir()
	var junk []string
	for i := range 1025 {
		p := filepath.Join(dir, fmt.Sprintf("tfhive-usage.%d.2025-12.csv", 100000+i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		junk = append(junk, p)
	}
	chownAll(t, 4242, junk...)
	l := filepath.Join(dir, "tfhive-usage.4343")
	writeLedger(t, filepath.Join(l, "2025-12.csv"), "1 1764600000 1764603600 1 0 r worker:0\n")
	chownAll(t, 4343, l, filepath.Join(l, "2025-12.csv"))
	h := Parse("g1", runScript(t, dir, time.Date(2025, 12, 2, 0, 0, 0, 0, time.UTC)), "s3cret", 4)
	if h.Overflow != "" || len(h.Refused) != UserNames || len(h.Entries) != 1 || h.Entries[0].User != "uid 4343" ||
		strings.Join(h.Crowded, ",") != "uid 4242" || len(h.Short) != 0 {
		t.Errorf("overflow %q, %d refused, crowded %q, short %q, entries %+v", h.Overflow, len(h.Refused), h.Crowded, h.Short, h.Entries)
	}
}

// No month after the host's own is read, in a directory or an older
// tfhive's name: a ledger for 2099 is not looked at, so it spends no
// bound of anyone's.
func TestScriptReadsNoMonthAfterTheHosts(t *testing.T) {
	dir := t.TempDir()
	me := strconv.Itoa(os.Getuid())
	next := time.Now().UTC().AddDate(0, 1, 0).Format("2006-01")
	const line = "1 1764600000 1764603600 1 0 r worker:0\n"
	writeLedger(t, filepath.Join(dir, "tfhive-usage."+me+".2099-01.csv"), line)
	writeLedger(t, filepath.Join(dir, "tfhive-usage."+me+"."+next+".csv"), line)
	writeLedger(t, filepath.Join(dir, "tfhive-usage."+me, next+".csv"), line)
	os.Chmod(filepath.Join(dir, "tfhive-usage."+me+".2099-01.csv"), 0o666)
	h := Parse("g1", runScript(t, dir, time.Date(2025, 12, 2, 0, 0, 0, 0, time.UTC)), "s3cret", 4)
	if len(h.Entries) != 0 || len(h.Refused) != 0 {
		t.Errorf("%+v", h)
	}
}

// scriptOut runs the script with small bounds l.
func scriptOut(t *testing.T, dir string, since time.Time, l limits) Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--norc", "-s")
	cmd.Stdin = strings.NewReader(script(since, "s3cret", l))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TFHIVE_CLAIMS_DIR=" + dir}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return Parse("g1", string(out), "s3cret", 4)
}

// A uid's ledgers past its bound of bytes are read in part and said to
// be short, the rest of theirs left: the host's answer is the others'
// whole. Past the host's bound, the host says so and the rest is not
// read: a warning naming the host, never its answer dropped.
func TestScriptSpendsEachUsersBytes(t *testing.T) {
	dir := t.TempDir()
	me := strconv.Itoa(os.Getuid())
	var ten strings.Builder
	for i := range 10 {
		fmt.Fprintf(&ten, "1 1764600000 1764603600 1 0 r%d worker:0\n", i)
	}
	for _, m := range []string{"2025-10", "2025-11", "2025-12"} {
		writeLedger(t, filepath.Join(dir, "tfhive-usage."+me, m+".csv"), ten.String())
	}
	since := time.Date(2025, 10, 2, 0, 0, 0, 0, time.UTC)
	// 39 bytes a line, 42 with "L " and its newline: 16 lines fit in
	// the user's 700.
	h := scriptOut(t, dir, since, limits{names: 64, user: 700, owners: 64, host: 1 << 20})
	if len(h.Entries) != 16 || len(h.Short) != 1 || h.Overflow != "" {
		t.Errorf("user's bound: %d entries, short %q, overflow %q", len(h.Entries), h.Short, h.Overflow)
	}
	// The host's 700 spends 128 on each ledger's header too: 10 lines,
	// then 3.
	h = scriptOut(t, dir, since, limits{names: 64, user: 1 << 20, owners: 64, host: 700})
	if len(h.Entries) != 13 || len(h.Short) != 0 || h.Overflow != "bytes" {
		t.Errorf("host's bound: %d entries, short %q, overflow %q", len(h.Entries), h.Short, h.Overflow)
	}
	h = scriptOut(t, dir, since, defaults)
	if len(h.Entries) != 30 || len(h.Short) != 0 || h.Overflow != "" {
		t.Errorf("defaults: %d entries, short %q, overflow %q", len(h.Entries), h.Short, h.Overflow)
	}
}

func TestFormatSince(t *testing.T) {
	for d, want := range map[time.Duration]string{7 * 24 * time.Hour: "7d", 36 * time.Hour: "36h", 90 * time.Minute: "1h30m", 45 * time.Second: "45s", 2 * time.Hour: "2h"} {
		if got := FormatSince(d); got != want {
			t.Errorf("%s: %q, want %q", d, got, want)
		}
	}
}

func TestSumByUserAndHost(t *testing.T) {
	h := Parse("g1", hostOut, "s3cret", 4)
	from, to := time.Unix(1764601800, 0), time.Unix(1764700000, 0)
	rows := Sum(h.Entries, from, to, false)
	// r1: half of its hour in the window, 2 GPUs: 1 GPU-hour, idle half
	// of its hour: 0.5; r2: 1 GPU-hour, all idle; r9 before the window.
	if len(rows) != 1 || rows[0].Key != "alice" || rows[0].GPUHours != 2 || rows[0].IdleHours != 1.5 || rows[0].Runs != 2 {
		t.Errorf("by user: %+v", rows)
	}
	rows = Sum(h.Entries, time.Unix(0, 0), to, true)
	if len(rows) != 1 || rows[0].Key != "g1" || rows[0].GPUHours != 5 || rows[0].Runs != 3 {
		t.Errorf("by host: %+v", rows)
	}
}

func TestParseSince(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "36h": 36 * time.Hour, "90m": 90 * time.Minute} {
		if d, err := ParseSince(in); err != nil || d != want {
			t.Errorf("%s: %s, %v", in, d, err)
		}
	}
	for _, in := range []string{"", "0d", "-1h", "week", "1.5d"} {
		if _, err := ParseSince(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, scripts)
}

func TestScriptSentAsWritten(t *testing.T) {
	shscripttest.SameMeaning(t, "usage.sh", usageSh)
}

// An attempt that began in October and ended on December 4th counts,
// for its part, in `usage --since 7d` on December 5th: the supervisor
// (ledger.sh) names its ledger by the attempt's end month, which the
// window's months hold, not by its start's, which they do not.
func TestALongAttemptCountsInTheMonthItEnded(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2025, 10, 20, 0, 0, 0, 0, time.UTC).Unix()
	end := time.Date(2025, 12, 4, 0, 0, 0, 0, time.UTC)
	write := shscript.Load(supervisor.Scripts, "scripts/ledger.sh").Text() +
		"\ntfhive_mark=M\ntfhive_ledger \"$1\" r1 worker:0 gpu:0,gpu:1 \"$2\" \"$3\" 0"
	cmd := exec.Command("bash", "--norc", "-c", write, "test", dir, strconv.FormatInt(start, 10), strconv.FormatInt(end.Unix(), 10))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("%v: %s", err, out)
	}
	now := time.Date(2025, 12, 5, 0, 0, 0, 0, time.UTC)
	from := now.Add(-7 * 24 * time.Hour)
	h := Parse("g1", runScript(t, dir, from), "s3cret", 4)
	rows := Sum(h.Entries, from, now, false)
	if len(rows) != 1 || rows[0].GPUHours != 6*24*2 {
		t.Errorf("%+v from %+v", rows, h)
	}
}

// A ledger swapped for a FIFO after find listed it (here by a wrapper of
// dd and head, first on PATH, as a colleague racing the read would) is
// not waited on: the read does not block, and the script ends.
func TestScriptReadsWithoutBlocking(t *testing.T) {
	dir, bin := t.TempDir(), t.TempDir()
	me := strconv.Itoa(os.Getuid())
	old := filepath.Join(dir, "tfhive-usage."+me+".2025-12.csv")
	writeLedger(t, old, "1 1764600000 1764603600 1 0 r worker:0\n")
	for _, cmd := range []string{"dd", "head"} {
		real, err := exec.LookPath(cmd)
		if err != nil {
			t.Skip("no " + cmd)
		}
		sh := "#!/bin/sh\nrm -f " + old + " && mkfifo " + old + "\nexec " + real + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(bin, cmd), []byte(sh), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--norc", "-s")
	cmd.Stdin = strings.NewReader(Script(time.Date(2025, 12, 2, 0, 0, 0, 0, time.UTC), "s3cret"))
	cmd.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "TFHIVE_CLAIMS_DIR=" + dir}
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("usage.sh blocked on a FIFO swapped in: %s", out)
	}
	if h := Parse("g1", string(out), "s3cret", 4); err != nil || len(h.Entries) != 0 {
		t.Errorf("%v %+v\n%s", err, h, out)
	}
}
