package report

import (
	"bytes"
	"io"
	"testing"

	"github.com/tfhive/tfhive/probe/testkit"
)

// testdata/trial is a sweep trial's log dir as the sweep benchmark
// leaves it (launcher/e2e/bench_sweep_test.go): one task on one GPU of
// 8 hosts × 8 (the plan's matrix has them all), no --sample, no
// --capture, a start and an exit. Every trial's tfhive writes its
// report as it ends (commands.writeRunReport).

// The trial's report, golden: written by the code before its CPU was
// cut (BenchmarkLoadWriteTrial), so that a cut changes no byte.
func TestTrialReport(t *testing.T) {
	r, err := Load("testdata/trial", "bench-038")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	checkInert(t, b.String())
	testkit.Golden(t, "testdata/golden/trial.html", b.Bytes())
}

// BenchmarkLoadWriteTrial is what writeRunReport costs a trial: its log
// dir read, its report written. Count it (-benchmem's allocs/op and
// B/op; instructions with callgrind, or perf stat where the machine
// lets it) rather than time it on a shared machine.
func BenchmarkLoadWriteTrial(b *testing.B) { benchLoadWrite(b, "testdata/trial", "bench-038") }

// benchLoadWrite loads the run id in dir and writes its report, b.N times.
func benchLoadWrite(b *testing.B, dir, id string) {
	b.ReportAllocs()
	for b.Loop() {
		r, err := Load(dir, id)
		if err != nil {
			b.Fatal(err)
		}
		if err := Write(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteTrial is the report's writing alone, its run read once.
func BenchmarkWriteTrial(b *testing.B) {
	r, err := Load("testdata/trial", "bench-038")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Write(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadWriteRun is the same for testdata/run: GPU samples,
// metrics with steps, restarts, two tasks.
func BenchmarkLoadWriteRun(b *testing.B) { benchLoadWrite(b, "testdata/run", "fixture") }
