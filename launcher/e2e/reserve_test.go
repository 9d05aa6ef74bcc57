package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// through points tfhive at the fleet through hosts file hosts (one that
// logs in as a local user: sshtest.Fleet.HostsYAMLAs).
func through(f *sshtest.Fleet, hosts string, args ...string) []string {
	return append([]string{args[0], "--hosts", hosts, "--ssh-config", f.SSHConfig}, args[1:]...)
}

// reservationsOf is `tfhive reservations --json` through hosts file hosts.
func reservationsOf(t *testing.T, f *sshtest.Fleet, hosts string) []struct {
	Host, ID, User, State, Ignored, Note string
	GPUs                                 []int
	Until                                time.Time
} {
	t.Helper()
	r := tfhive(t, f.Env(), f.Dir, through(f, hosts, "reservations", "--json")...)
	wantCode(t, r, 0)
	var doc struct {
		Reservations []struct {
			Host, ID, User, State, Ignored, Note string
			GPUs                                 []int
			Until                                time.Time
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("reservations --json: %v\n%s", err, r.stdout)
	}
	return doc.Reservations
}

// Two hosts, two real local users. Alice books h2's GPUs for a few
// seconds: inside the window Bob's plan is kept off them (naming Alice
// and until when) and his --wait run waits, then starts once it ends;
// Alice's own run lands on h2 before h1; an overlapping reservation is
// refused naming her, one over the host's policy naming the rule; a run
// of Alice's may use GPUs Bob reserved later on, when its --timeout ends
// before; Bob cannot remove Alice's reservation.
func TestReserveKeepsOthersOff(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.StartShared(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1},
		sshtest.Profile{Name: "h2", GPU: "idle-2gpu.xml", AliveInterval: 1})
	if err := f.Host("h2").SetPolicy("reservations:\n  max_hours: 1\n"); err != nil {
		t.Fatal(err)
	}
	alice, bob := sshtest.AddUser(t, "alice"), sshtest.AddUser(t, "bob")
	ah, bh := f.HostsYAMLAs(t, alice), f.HostsYAMLAs(t, bob)

	r := tfhive(t, f.Env(), f.Dir, through(f, ah, "reserve", "--gpu", "h2:0,1", "--from", "now", "--for", "1h", "--note", "paper deadline")...)
	wantCode(t, r, 0)
	wantContains(t, "reserve", r.stdout, "tfhive: reserved GPUs 0,1 on h2 for "+alice.Name+" from ")
	rs := reservationsOf(t, f, bh)
	if len(rs) != 1 || rs[0].User != alice.Name || rs[0].State != "now" || rs[0].Note != "paper deadline" || len(rs[0].GPUs) != 2 {
		t.Fatalf("reservations as bob: %+v", rs)
	}
	mine := rs[0].ID
	r = tfhive(t, f.Env(), f.Dir, through(f, bh, "ps")...)
	wantCode(t, r, 0)
	wantContains(t, "ps", r.stdout, mine, alice.Name, "paper deadline")

	// Inside the window: Bob's plan that needs h2 is refused naming who
	// and until when; an overlapping reservation too.
	r = tfhive(t, f.Env(), f.Dir, through(f, bh, "plan", "--workers", "3", "--", "true")...)
	wantCode(t, r, 3)
	wantContains(t, "plan", r.stderr, "reserved by "+alice.Name+" until ")
	r = tfhive(t, f.Env(), f.Dir, through(f, bh, "reserve", "--gpu", "h2:1", "--for", "10m")...)
	wantCode(t, r, 3)
	wantContains(t, "reserve", r.stderr, "h2: GPU 1 already reserved by "+alice.Name)
	// Alice's run goes to her reservation first, h1 coming first though;
	// its report names the reservation.
	args, logDir := fleetArgsAs(t, f, ah, "--workers", "1", "--", "true")
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	plan := readJSON[struct {
		Tasks        []struct{ Host string }
		Reservations []struct{ ID string }
	}](t, logDir, "plan.json")
	if len(plan.Tasks) != 1 || plan.Tasks[0].Host != "h2" || len(plan.Reservations) != 1 || plan.Reservations[0].ID != mine {
		t.Errorf("alice's run is not in her reservation on h2: %+v\n%s", plan, r.stdout)
	}
	r = tfhive(t, f.Env(), f.Dir, "report", "--log-root", filepath.Dir(logDir), filepath.Base(logDir), "-o", "-")
	wantCode(t, r, 0)
	wantContains(t, "report", r.stdout, alice.Name+"&#39;s "+mine+" on h2: GPUs 0,1")

	// Over the host's policy: named rule.
	r = tfhive(t, f.Env(), f.Dir, through(f, bh, "reserve", "--gpu", "h2:0", "--from", "now+2h", "--for", "2h")...)
	wantCode(t, r, 2)
	wantContains(t, "reserve", r.stderr, "h2: reservation refused: it is 2h long; the host's policy allows at most 1 h")
	// Bob books h1:0 from in an hour: Alice's run without --timeout may
	// not take it, one with a --timeout that ends before may.
	r = tfhive(t, f.Env(), f.Dir, through(f, bh, "reserve", "--gpu", "h1:0", "--from", "now+1h", "--for", "30m")...)
	wantCode(t, r, 0)
	id := strings.TrimSuffix(r.stdout[strings.LastIndex(r.stdout, "(reservation ")+len("(reservation "):], ")\n")
	args, _ = fleetArgsAs(t, f, ah, "--workers", "4", "--", "true")
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "run", r.stderr, "reserved by "+bob.Name+" from ", "a run with a --timeout that ends before may use it")
	args, _ = fleetArgsAs(t, f, ah, "--workers", "4", "--timeout", "10m", "--", "true")
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	// Only its owner (or root) removes one.
	r = tfhive(t, f.Env(), f.Dir, through(f, ah, "unreserve", id)...)
	wantCode(t, r, 1)
	wantContains(t, "unreserve", r.stderr, "reservation "+id+" is "+bob.Name+"'s: only they or root may remove it")
	for _, x := range []struct{ hosts, id string }{{bh, id}, {ah, mine}} {
		r = tfhive(t, f.Env(), f.Dir, through(f, x.hosts, "unreserve", x.id)...)
		wantCode(t, r, 0)
	}
	if rs := reservationsOf(t, f, ah); len(rs) != 0 {
		t.Errorf("reservations left: %+v", rs)
	}

	// A window of seconds, beginning in 2: Bob's --wait run, which would
	// overlap it whenever it plans, waits for its end (at least 4 s from
	// now: --from is read to the second), then runs on h2 too.
	before := time.Now()
	r = tfhive(t, f.Env(), f.Dir, through(f, ah, "reserve", "--gpu", "h2:0,1", "--from", "now+2s", "--for", "3s")...)
	wantCode(t, r, 0)
	args, _ = fleetArgsAs(t, f, bh, "--workers", "3", "--wait", "60s", "--", "true")
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	wantContains(t, "run", r.stderr, "tfhive: waiting")
	if d := time.Since(before); d < 4*time.Second {
		t.Errorf("bob's run ended %s after the reservation began to be made, inside its window", d)
	}
}

// fleetArgsAs is runArgs through hosts file hosts.
func fleetArgsAs(t *testing.T, f *sshtest.Fleet, hosts string, args ...string) ([]string, string) {
	logDir := filepath.Join(t.TempDir(), "logs")
	return through(f, hosts, append([]string{"run", "--log-dir", logDir, "--grace", "2s"}, args...)...), logDir
}

// A hostile colleague on the host cannot forge, extend or hide Alice's
// reservation: a file she makes by hand books for her, never for another,
// and only within the host's rules (over them, or overlapping Alice's made
// before, it grants nothing and says so, naming her); a link named as a
// reservation grants nothing; Alice's file cannot be renamed or removed
// by her; a flood of names fails the host closed for plans (ps still
// reaches it).
func TestReserveForgedFilesFailClosed(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	s := newSharedHost(t)
	r := tfhive(t, s.f.Env(), s.f.Dir, s.as("reserve", "--gpus", "1", "--for", "1h")...)
	wantCode(t, r, 0)
	rs := reservationsOf(t, s.f, s.aliceHosts)
	if len(rs) != 1 || len(rs[0].GPUs) != 1 || rs[0].GPUs[0] != 0 {
		t.Fatalf("reservations: %+v", rs)
	}
	alices := filepath.Join(s.h.ClaimsPath(), filepath.Base(findBooking(t, s.h.ClaimsDir(), rs[0].ID)))

	now := time.Now()
	name := func(id string, from, until time.Duration, gpus ...int) string {
		return filepath.Join(s.h.ClaimsPath(), inventory.BookingName(inventory.Booking{ID: id, GPUs: gpus, From: now.Add(from), Until: now.Add(until)}))
	}
	s.mallorySh(t, strings.Join([]string{
		// A month of both GPUs, by hand: over the default 24 h.
		"touch " + name("0000000a", 0, 30*24*time.Hour, 0, 1),
		// Overlapping Alice's, made after it.
		"touch " + name("0000000b", 0, time.Hour, 0),
		// A link named as one, to Alice's own file.
		"ln -s " + alices + " " + name("0000000c", 0, time.Hour, 1),
		// Extending Alice's, removing it: the sticky dir refuses both.
		"! mv " + alices + " " + name("0000000d", 0, 20*time.Hour, 0) + " 2>/dev/null",
		"! rm -f " + alices + " 2>/dev/null",
	}, " && "))
	rs = reservationsOf(t, s.f, s.aliceHosts)
	got := map[string]string{}
	for _, b := range rs {
		got[b.ID] = b.User + ": " + b.State + ": " + b.Ignored
	}
	for id, want := range map[string]string{
		rs[0].ID:   s.alice.Name + ": now: ",
		"0000000a": s.mallory.Name + ": ignored: it is 720h long; the default allows at most 24 h",
		"0000000b": s.mallory.Name + ": ignored: GPU 0 is reserved by " + s.alice.Name,
		"0000000c": s.mallory.Name + ": ignored: it is a symbolic link",
	} {
		if !strings.HasPrefix(got[id], want) {
			t.Errorf("reservation %s: %q, want %q", id, got[id], want)
		}
	}
	// None of mallory's files keeps root's run off GPU 1; Alice's keeps it
	// off GPU 0.
	args, _ := runArgs(t, s.f, "--workers", "1", "--", "sh", "-c", "echo gpus=$CUDA_VISIBLE_DEVICES")
	r = tfhive(t, s.f.Env(), s.f.Dir, args...)
	wantCode(t, r, 0)
	wantContains(t, "run", r.stdout, "gpus=1")
	r = tfhive(t, s.f.Env(), s.f.Dir, fleetArgs(s.f, "status")...)
	wantCode(t, r, 0)
	wantContains(t, "status", r.stdout, " reserved ", "reserved by "+s.alice.Name+" until ")

	// Mallory's files named with Alice's id, one not in the format, one
	// that is: Alice's unreserve removes hers, leaves Mallory's and
	// succeeds.
	s.mallorySh(t, "touch "+filepath.Join(s.h.ClaimsPath(), inventory.BookingPrefix+rs[0].ID+".x")+" "+name(rs[0].ID, 0, time.Hour, 1))
	r = tfhive(t, s.f.Env(), s.f.Dir, s.as("unreserve", rs[0].ID)...)
	wantCode(t, r, 0)
	wantContains(t, "unreserve", r.stdout, "tfhive: removed reservation "+rs[0].ID+" on ")
	wantContains(t, "unreserve", r.stderr, "reservation "+rs[0].ID+" is "+s.mallory.Name+"'s too, left alone")
	if _, err := os.Lstat(filepath.Join(s.h.ClaimsDir(), filepath.Base(alices))); !os.IsNotExist(err) {
		t.Errorf("alice's reservation file after unreserve: %v", err)
	}
	for _, b := range reservationsOf(t, s.f, s.aliceHosts) {
		if b.User == s.alice.Name || b.ID == rs[0].ID && b.User != s.mallory.Name {
			t.Errorf("after alice's unreserve: %+v", b)
		}
	}

	// More names than a probe lists: the host's reservations are
	// unknown, and none of its GPUs is used.
	var flood strings.Builder
	fmt.Fprintf(&flood, "cd %s && for i in $(seq 1025); do : > tfhive-reservation.$i; done", s.h.ClaimsPath())
	s.mallorySh(t, flood.String())
	r = tfhive(t, s.f.Env(), s.f.Dir, fleetArgs(s.f, "status")...)
	wantContains(t, "status", r.stdout+r.stderr, "more than 1024 tfhive-reservation files: its reservations are unknown")
	// It plans nothing of ps, which still reaches the host (and says the
	// reservations are unknown).
	r = tfhive(t, s.f.Env(), s.f.Dir, s.as("ps")...)
	wantCode(t, r, 0)
	wantContains(t, "ps", r.stderr, "more than 1024 tfhive-reservation files: its reservations are unknown")
}

// findBooking is the path of reservation id's file in dir.
func findBooking(t *testing.T, dir, id string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, inventory.BookingPrefix+id+".*"))
	if len(m) != 1 {
		ls, _ := os.ReadDir(dir)
		t.Fatalf("reservation %s: %v in %v", id, m, ls)
	}
	return m[0]
}
