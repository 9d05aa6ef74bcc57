package view

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// A claimed GPU whose run (the user's own) has every task here idle past
// the warning says "idle 37m" in DETAIL and --json's idle, as ps does;
// another user's run, one task busy, or a file that did not parse says
// nothing.
func TestStatusShowsIdle(t *testing.T) {
	n := func(v int) *int { return &v }
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	gpu := func(i int) inventory.GPU {
		return inventory.GPU{Index: i, UUID: "GPU-" + strconv.Itoa(i), Name: "A100", MemoryUsedMiB: n(0), MemoryTotalMiB: n(81920), UtilizationPct: n(0)}
	}
	claim := func(gpu, uid int, run, task string) inventory.Claim {
		return inventory.Claim{Kind: "gpu", ID: gpu, RunID: run, Task: task, User: "u" + strconv.Itoa(uid), UID: uid, PID: 100 + gpu, Since: since}
	}
	now := int64(1_800_000_000)
	h := inventory.HostInventory{Name: "g1", GPUs: []inventory.GPU{gpu(0), gpu(1), gpu(2), gpu(3), gpu(4)},
		Claims: []inventory.Claim{
			claim(0, 1000, "mine", "worker:0"), claim(1, 1000, "mine", "worker:1"),
			claim(2, 1000, "half", "worker:0"), claim(3, 1000, "half", "worker:1"),
			claim(4, 2000, "theirs", "worker:0"),
		},
		Kept: &inventory.KeptRuns{UID: 1000, Now: now, Tasks: []inventory.KeptTask{
			{RunID: "mine", Task: "worker:0", Started: true, IdleSince: now - 37*60},
			{RunID: "mine", Task: "worker:1", Started: true, IdleSince: now - 40*60},
			{RunID: "half", Task: "worker:0", Started: true, IdleSince: now - 60},
			{RunID: "half", Task: "worker:1", Started: true}, // busy, or its file malformed
			{RunID: "theirs", Task: "worker:0", Started: true, IdleSince: now - 60},
		}}}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{h}}
	st := schedule.Classify(inv, schedule.Availability{MaxUtilPct: 10, MaxMemMiB: 1024})
	var txt, js bytes.Buffer
	if err := WriteStatusTable(&txt, inv, st, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(txt.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("status:\n%s", txt.String())
	}
	for i, want := range []bool{true, true, false, false, false} {
		line := lines[i+1]
		if !strings.Contains(line, "claimed") || strings.HasSuffix(line, "; idle 37m") != want || !want && strings.Contains(line, "idle") {
			t.Errorf("GPU %d: %q, want idle 37m: %t", i, line, want)
		}
	}
	if err := WriteStatusJSON(&js, inv, st); err != nil {
		t.Fatal(err)
	}
	var doc StatusDocument
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for i, g := range doc.Hosts[0].GPUs {
		if want := map[bool]string{true: "idle 37m"}[i < 2]; g.Idle != want {
			t.Errorf("--json GPU %d: idle %q, want %q", i, g.Idle, want)
		}
	}
	if strings.Contains(js.String(), "idle_since") || strings.Contains(js.String(), "Kept") {
		t.Errorf("--json carries the run directories' raw state:\n%s", js.String())
	}
}
