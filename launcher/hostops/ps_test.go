package hostops

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/testkit"
)

const psGoldenDir = "testdata/ps"

// A kept run's state on a host, from its run directory there.
func TestKeptStates(t *testing.T) {
	const me = 1000
	started := func(task string) inventory.KeptTask {
		return inventory.KeptTask{RunID: "r1", Task: task, Started: true, Followed: true, Fresh: true}
	}
	with := func(t inventory.KeptTask, f func(*inventory.KeptTask)) inventory.KeptTask { f(&t); return t }
	tests := []struct {
		name   string
		uid    int
		tasks  []string
		kept   []inventory.KeptTask
		other  []inventory.KeptTask // another host's, same run
		state  string
		keeper string
	}{
		{"followed and heard from", me, []string{"ps:0", "worker:0"}, []inventory.KeptTask{started("ps:0"), started("worker:0")}, nil, RunRunning, "yes"},
		{"a task not started yet", me, []string{"ps:0", "worker:0"}, []inventory.KeptTask{started("ps:0"), with(started("worker:0"), func(k *inventory.KeptTask) { k.Started = false })}, nil, RunStarting, "-"},
		{"a task whose files are not there yet", me, []string{"ps:0", "worker:0"}, []inventory.KeptTask{started("ps:0")}, nil, RunStarting, "-"},
		{"no session follows one", me, []string{"ps:0", "worker:0"}, []inventory.KeptTask{started("ps:0"), with(started("worker:0"), func(k *inventory.KeptTask) { k.Followed = false })}, nil, RunUnattended, "no"},
		{"nobody heard from lately", me, []string{"ps:0"}, []inventory.KeptTask{with(started("ps:0"), func(k *inventory.KeptTask) { k.Fresh = false })}, nil, RunUnattended, "no"},
		{"a task ended here", me, []string{"ps:0"}, []inventory.KeptTask{started("ps:0"), with(started("worker:0"), func(k *inventory.KeptTask) { k.Ended, k.Followed = true, false })}, nil, RunFinishing, "yes"},
		{"a task ended on another host", me, []string{"ps:0"}, []inventory.KeptTask{started("ps:0")}, []inventory.KeptTask{with(started("worker:0"), func(k *inventory.KeptTask) { k.Ended = true })}, RunFinishing, "yes"},
		{"workers ended, nobody keeps the ps", me, []string{"ps:0"}, []inventory.KeptTask{with(started("ps:0"), func(k *inventory.KeptTask) { k.Followed = false }), with(started("worker:0"), func(k *inventory.KeptTask) { k.Ended = true })}, nil, RunUnattended, "no"},
		{"another user's claims with the same run id", me + 1, []string{"ps:0"}, []inventory.KeptTask{started("ps:0")}, nil, "", "-"},
		{"no run directory (--reconnect 0)", me, []string{"ps:0"}, nil, nil, "", "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			since := time.Now().Add(-time.Minute)
			var claims []inventory.Claim
			for i, task := range tt.tasks {
				claims = append(claims, inventory.Claim{Kind: "port", ID: 2000 + i, RunID: "r1", Task: task, User: "u", UID: tt.uid, PID: 10 + i, Since: since})
			}
			inv := inventory.Inventory{Hosts: []inventory.HostInventory{
				{Name: "h1", Claims: claims, Kept: &inventory.KeptRuns{UID: me, Tasks: tt.kept}},
				{Name: "h2", Kept: &inventory.KeptRuns{UID: me, Tasks: tt.other}},
			}}
			runs := Runs(inv)
			if len(runs) != 1 {
				t.Fatalf("runs %+v, want one", runs)
			}
			keeper := "-"
			if k := runs[0].Keeper; k != nil {
				keeper = map[bool]string{true: "yes", false: "no"}[*k]
			}
			if runs[0].State != tt.state || keeper != tt.keeper {
				t.Errorf("state %q, keeper %s; want %q, %s", runs[0].State, keeper, tt.state, tt.keeper)
			}
			var table, js strings.Builder
			view.WriteRuns(&table, runs, time.Now())
			view.WriteRunsJSON(&js, runs)
			state := tt.state
			if state == "" {
				state = "-"
			}
			if !strings.Contains(table.String(), "STATE") || !strings.Contains(table.String(), " "+state+" ") {
				t.Errorf("table:\n%s", table.String())
			}
			if (tt.state != "") != strings.Contains(js.String(), `"state": "`+tt.state+`"`) ||
				(tt.keeper != "-") != strings.Contains(js.String(), `"keeper": `) {
				t.Errorf("json:\n%s", js.String())
			}
		})
	}
}

// ps shows each run's GPUs' live utilisation, matched by the UUID the
// claim names (indexes may be renumbered), in GPUS' order; a GPU the host
// did not report leaves the whole cell unknown rather than partial.
func TestRunsLiveUse(t *testing.T) {
	since := time.Now().Add(-time.Minute)
	gpu := func(id int, uuid string) inventory.Claim {
		return inventory.Claim{Kind: "gpu", ID: id, UUID: uuid, RunID: "r1", Task: "worker:0", User: "u", UID: 1000, PID: 10, Since: since}
	}
	use := []inventory.GPUUse{
		{Index: 0, UUID: "GPU-aaa", Util: 3, MemMiB: 512},
		{Index: 1, UUID: "GPU-bbb", Util: 97, MemMiB: 10444.8},
		{Index: 2, UUID: "GPU-ccc", Util: 50, MemMiB: 0},
	}
	tests := []struct {
		name   string
		claims []inventory.Claim
		use    []inventory.GPUUse
		cell   string
		js     string
	}{
		{"matched by uuid, in GPUS' order", []inventory.Claim{gpu(1, "GPU-bbb"), gpu(0, "GPU-aaa")}, use, "97% 10.2G, 3% 0.5G", `"util_pct": 97`},
		{"index renumbered: the uuid decides", []inventory.Claim{gpu(0, "GPU-ccc")}, use, "50% 0.0G", `"uuid": "GPU-ccc"`},
		{"a GPU the host did not report", []inventory.Claim{gpu(0, "GPU-aaa"), gpu(3, "GPU-ddd")}, use, "-", ""},
		{"no nvidia-smi", []inventory.Claim{gpu(0, "GPU-aaa")}, nil, "-", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := Runs(inventory.Inventory{Hosts: []inventory.HostInventory{{Name: "h1", Claims: tt.claims, GPUUse: tt.use}}})
			if len(runs) != 1 {
				t.Fatalf("runs %+v, want one", runs)
			}
			var table, js strings.Builder
			if err := view.WriteRuns(&table, runs, time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := view.WriteRunsJSON(&js, runs); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(table.String(), "\n")
			if !strings.Contains(lines[0], "GPU UTIL / MEM") || !strings.Contains(lines[1], "  "+tt.cell+"  ") {
				t.Errorf("table:\n%s\nwant cell %q", table.String(), tt.cell)
			}
			if tt.js == "" && strings.Contains(js.String(), "gpu_usage") || tt.js != "" && !strings.Contains(js.String(), tt.js) {
				t.Errorf("json:\n%s\nwant %q", js.String(), tt.js)
			}
		})
	}
}

// Claims become one row per run, user and host, oldest first: a run id
// held by another user is another row, a blocked lock file none, a holder
// that cannot be seen a row of its own.
func TestRunsGroupsClaims(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.Local)
	claim := func(kind string, id int, run, task, user string, pid int, since time.Time) inventory.Claim {
		return inventory.Claim{Kind: kind, ID: id, RunID: run, Task: task, User: user, UID: 1000, PID: pid, Since: since}
	}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{
		{Name: "h1", Claims: []inventory.Claim{
			claim("gpu", 0, "r1", "worker:0", "alice", 10, t0.Add(time.Minute)),
			claim("gpu", 1, "r1", "worker:0", "alice", 10, t0.Add(time.Minute)),
			claim("port", 2222, "r1", "worker:0", "alice", 10, t0.Add(time.Minute)),
			claim("gpu", 2, "r1", "ps:0", "alice", 11, t0), // the run's oldest claim here
			claim("gpu", 2, "r1", "ps:0", "alice", 11, t0),
			claim("gpu", 3, "r1", "worker:0", "bob", 20, t0.Add(2*time.Minute)),
			{Kind: "gpu", ID: 4, Blocked: "not a regular file"},
			claim("gpu", 5, "", "", "", 0, t0.Add(3*time.Minute)),
		}},
		{Name: "h2", Claims: []inventory.Claim{claim("gpu", 0, "r1", "worker:1", "alice", 30, t0.Add(-time.Minute))}},
	}}
	runs := Runs(inv)
	var got []string
	for _, r := range runs {
		got = append(got, r.RunID+"/"+r.User+"@"+r.Host+" tasks "+strings.Join(r.Tasks, ",")+" gpus "+view.IntList(r.GPUs)+
			" ports "+view.IntList(r.Ports)+" holders "+view.IntList(r.Holders))
	}
	want := []string{
		"r1/alice@h2 tasks worker:1 gpus 0 ports - holders 30",
		"r1/alice@h1 tasks worker:0,ps:0 gpus 0,1,2 ports 2222 holders 10,11",
		"r1/bob@h1 tasks worker:0 gpus 3 ports - holders 20",
		"/@h1 tasks  gpus 5 ports - holders -",
	}
	if !slices.Equal(got, want) {
		t.Errorf("runs\n %q\nwant\n %q", got, want)
	}
	if !runs[1].Since.Equal(t0) {
		t.Errorf("since %v, want the oldest claim's", runs[1].Since)
	}
	var table bytes.Buffer
	if err := view.WriteRuns(&table, runs, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join(psGoldenDir, "grouped.txt"), table.Bytes())
	var js bytes.Buffer
	if err := view.WriteRunsJSON(&js, nil); err != nil || js.String() != "{\n  \"runs\": []\n}\n" {
		t.Errorf("no runs: %q, %v", js.String(), err)
	}
}

// A run's GPUs idle past the warning on a host read "idle 37m" in ps,
// from the tasks' NAME.idle and the host's clock: only when every task
// of the run there that still runs is idle, for the shortest stretch.
func TestKeptIdle(t *testing.T) {
	const me, now = 1000, 1_000_000
	task := func(id string, since int64, ended bool) inventory.KeptTask {
		return inventory.KeptTask{RunID: "r1", Task: id, Started: true, Followed: true, Fresh: true, IdleSince: since, Ended: ended}
	}
	for _, c := range []struct {
		kept []inventory.KeptTask
		want string
	}{
		{[]inventory.KeptTask{task("worker:0", now-37*60, false), task("worker:1", now-40*60, false)}, "idle 37m"},
		{[]inventory.KeptTask{task("worker:0", now-37*60, false), task("worker:1", 0, false)}, ""},
		{[]inventory.KeptTask{task("worker:0", now-90, false), task("worker:1", 0, true)}, "idle 1m"},
	} {
		var claims []inventory.Claim
		for i, k := range c.kept {
			claims = append(claims, inventory.Claim{Kind: "gpu", ID: i, RunID: "r1", Task: k.Task, User: "u", UID: me, PID: 10 + i, Since: time.Now()})
		}
		inv := inventory.Inventory{Hosts: []inventory.HostInventory{{Name: "h1", Claims: claims, Kept: &inventory.KeptRuns{UID: me, Now: now, Tasks: c.kept}}}}
		runs := Runs(inv)
		if len(runs) != 1 || runs[0].Idle != c.want {
			t.Errorf("%+v: %+v, want %q", c.kept, runs, c.want)
		}
	}
}
