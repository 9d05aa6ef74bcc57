package launcher

import (
	"strings"
	"testing"

	"github.com/tfhive/tfhive/schedule"
)

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 100 << 20: "100.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWritePlanCode(t *testing.T) {
	p := &schedule.Plan{RunID: "r", Strategy: "spread", Tasks: []schedule.Task{{ID: "worker:0", Role: "worker", Host: "a"}},
		Code: &schedule.PlanCode{Code: schedule.Code{Hash: strings.Repeat("ab", 32), Bytes: 3 << 20, Files: 12},
			Hosts: []schedule.CodeHost{{Host: "a", Present: true}, {Host: "b"}, {Host: "c"}}}}
	var b strings.Builder
	if err := WritePlan(&b, p); err != nil {
		t.Fatal(err)
	}
	want := "run r: 1 task on 1 host, 0 GPUs, strategy spread\ncode abababababab: 12 files, 3.0 MiB; on a; to send to b, c\n\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("plan starts\n%q\nwant\n%q", b.String()[:min(len(b.String()), len(want))], want)
	}
}
