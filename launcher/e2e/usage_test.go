package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// usage sums a day of runs by user from the host's ledgers, written here
// with controlled times as the supervisors write them (ledger.sh): the
// test user's and a real colleague's, each owning their own directory
// and file. A ledger named for a colleague but owned by someone else is
// not believed, a line later than its file's last write proves nothing,
// and a ledger for a month after the host's is not read; runs older than
// --since are left out, one that began before it counts for its part
// within it.
func TestUsageSumsADayByUser(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "u1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	alice, mallory := sshtest.AddUser(t, "alice"), sshtest.AddUser(t, "mallory")
	dir := f.Host("u1").ClaimsDir()
	now := time.Now().Unix()
	month := time.Now().UTC().Format("2006-01")
	// ledgerAt writes name (under dir) for owner: a user's directory, its
	// month's ledger in it, or an older tfhive's ledger beside them.
	ledgerAt := func(name string, owner int, text string) {
		p := filepath.Join(dir, name)
		if d := filepath.Dir(name); d != "." {
			if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			if err := os.Chown(filepath.Join(dir, d), owner, owner); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, owner, owner); err != nil {
			t.Fatal(err)
		}
		// The file's last write is now: a line may not end after it.
		os.Chtimes(p, time.Unix(now, 0), time.Unix(now, 0))
	}
	ledger := func(uid int, lines ...string) {
		ledgerAt(fmt.Sprintf("tfhive-usage.%d/%s.csv", uid, month), uid, strings.Join(lines, "\n")+"\n")
	}
	line := func(start, end int64, gpus, idle int, run string) string {
		return fmt.Sprintf("1 %d %d %d %d %s worker:0", now-start, now-end, gpus, idle, run)
	}
	me := os.Getuid()
	ledger(me,
		line(3*3600, 2*3600, 2, 3600, "mine-1"),  // 2 GPU-hours, 1 idle
		line(30*3600, 29*3600, 2, 0, "mine-old"), // before the day
		line(3600, -3600, 1, 0, "mine-forged"))   // ends in the future
	ledger(alice.UID,
		line(25*3600, 22*3600, 1, 3600, "alice-1"), // 2 of its 3 hours in the day: 2 GPU-hours, 2/3 idle
		line(2*3600, 3600, 2, 0, "alice-2"))        // 2 GPU-hours
	// An older tfhive's ledger named for Mallory, but the test user's.
	ledgerAt(fmt.Sprintf("tfhive-usage.%d.%s.csv", mallory.UID, month), me, line(3600, 0, 2, 0, "not-mallorys")+"\n")
	// Mallory's ledger for a month to come, which is not read.
	ledgerAt(fmt.Sprintf("tfhive-usage.%d.2099-01.csv", mallory.UID), mallory.UID, line(3600, 0, 2, 0, "mallory-future")+"\n")
	// Mallory's own ledger holds tfhive's old section lines: a header for
	// the test user's uid with a line after it, a users block naming her
	// uid root, and no final newline. Every line is hers: the forged one
	// counts as her own use, the rest prove nothing, and no other
	// ledger's lines become hers.
	ledgerAt(fmt.Sprintf("tfhive-usage.%d/%s.csv", mallory.UID, month), mallory.UID, strings.Join([]string{
		line(3600, 0, 1, 0, "mallory-1"),
		fmt.Sprintf("@@tfhive-ledger %d %d 100 tfhive-usage.%d.%s.csv", me, now, me, month),
		line(3600, 0, 2, 0, "forged-as-root"),
		"@@tfhive-users",
		fmt.Sprintf("root:x:%d:0::/root:/bin/bash", mallory.UID)}, "\n"))

	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "usage", "--since", "1d")...)
	wantCode(t, r, 0)
	wantContains(t, "usage", r.stdout, "USER", "GPU-HOURS", "IDLE GPU-HOURS")
	rows := map[string][]string{}
	for _, l := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(l); len(f) == 5 {
			rows[f[0]] = f[1:]
		}
	}
	for who, want := range map[string]string{alice.Name: "4.00 0.67 17% 2", "root": "2.00 1.00 50% 1", mallory.Name: "3.00 0.00 0% 2", "total": "9.00 1.67 19% 5"} {
		if got := strings.Join(rows[who], " "); got != want {
			t.Errorf("%s: %q, want %q\n%s", who, got, want, r.stdout)
		}
	}
	wantContains(t, "usage's warnings", r.stderr,
		fmt.Sprintf("u1: tfhive-usage.%d.%s.csv is not believed: owned by uid %d, not %d", mallory.UID, month, me, mallory.UID),
		"4 lines in the ledgers proved nothing")
	if !strings.Contains(r.stdout, "(1d)") {
		t.Errorf("--since as written:\n%s", r.stdout)
	}

	j := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "usage", "--since", "1d", "--by", "host", "--json")...)
	wantCode(t, j, 0)
	var doc struct {
		Rows []struct {
			Key      string
			GPUHours float64 `json:"gpu_hours"`
		}
		Refused []string
	}
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil || len(doc.Rows) != 1 || doc.Rows[0].Key != "u1" || doc.Rows[0].GPUHours < 8.99 || len(doc.Refused) != 1 {
		t.Errorf("--by host --json: %v\n%s", err, j.stdout)
	}
	wantCode(t, tfhive(t, f.Env(), f.Dir, fleetArgs(f, "usage", "--by", "group")...), 2)
}

// A FIFO a colleague planted at the user's directory of ledgers neither
// hangs nor fails a GPU run, kept (the default) or in a session of its
// own (--reconnect 0): the run ends with its task, its GPUs free, and its
// console warns that the attempt is not in the ledger, and why (the
// host's path to its claims directory, which the test's is not).
func TestUsageLedgerPlantedFIFOIsAWarning(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "u1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	l := filepath.Join(f.Host("u1").ClaimsDir(), fmt.Sprintf("tfhive-usage.%d", os.Getuid()))
	if err := syscall.Mkfifo(l, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--reconnect", "0"}} {
		args, _ := runArgs(t, f, append(extra, "--workers", "1", "--gpus-per-worker", "1", "--", "true")...)
		r := tfhive(t, f.Env(), f.Dir, args...)
		wantCode(t, r, 0)
		wantContains(t, fmt.Sprintf("the run's console (%v)", extra), r.stdout+r.stderr,
			"tfhive: warning: worker:0 on u1: the attempt is not in the host's usage ledger: /",
			fmt.Sprintf("/tfhive-usage.%d is not a directory (fifo)\n", os.Getuid()))
	}
}
