package sweepjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/probe/testkit"
)

// These tests drive a sweep with trials of their own (Hooks.Trial), no
// host and no job: the queue, the record, kill's stop file and the
// signals. launcher/commands' fake-host tests run real trials through it.

// grid is a sweep name of one parameter N, in a directory of its own.
func grid(t *testing.T, name string, values ...string) record.Sweep {
	t.Chdir(t.TempDir())
	rec := record.Sweep{Name: name, Command: []string{"train", "--n={N}"}, Params: []record.SweepParam{{Name: "N", Values: values}}}
	rec.Trials = sweep.Trials(rec)
	return rec
}

func endLine(sum *record.Summary, err error) string {
	if sum == nil {
		return fmt.Sprintf("without a summary: %v", err)
	}
	return sum.Result
}

// The queue lets --max-parallel trials run at once, each with its
// parameters in its command and environment, its console in its log dir
// and the sweep's book; the record is written and the ends said.
func TestRunRunsEveryTrialWithinMaxParallel(t *testing.T) {
	rec := grid(t, "sw", "1", "2", "3", "4")
	var running, most atomic.Int32
	var mu sync.Mutex
	var commands []string
	var out testkit.SyncBuffer
	var ended End
	err := Run(context.Background(), Spec{Record: rec, MaxParallel: 2, Say: &out, Console: true}, Hooks{
		EndLine: endLine,
		Trial: func(ctx context.Context, tr Trial) (*record.Summary, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if tr.Book == nil || tr.Signals == nil || tr.Console == nil || !slices.Contains(tr.Env, "N="+tr.Params["N"]) {
				t.Errorf("trial %s: %+v", tr.ID, tr)
			}
			fmt.Fprintf(tr.Console, "hello from %s\n", tr.ID)
			tr.Started()
			mu.Lock()
			commands = append(commands, strings.Join(tr.Command, " "))
			mu.Unlock()
			result := record.ResultSucceeded
			if tr.Params["N"] == "3" {
				result = record.ResultFailed
			}
			return &record.Summary{RunID: tr.ID, Result: result}, nil
		},
		End: func(console io.Writer, e End) error {
			if console == nil {
				t.Error("a foreground sweep keeps no console.log")
			}
			ended = e
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if most.Load() > 2 {
		t.Errorf("%d trials at once, --max-parallel 2", most.Load())
	}
	slices.Sort(commands)
	if got := strings.Join(commands, ","); got != "train --n=1,train --n=2,train --n=3,train --n=4" {
		t.Errorf("commands: %s", got)
	}
	if ended.Interrupted || ended.Stopped {
		t.Errorf("end: %+v", ended)
	}
	for _, want := range []string{"tfhive: sweep sw: 4 trials, 2 at a time", "tfhive: trial sw-001 started (N=1)", "tfhive: trial sw-003 failed", "tfhive: trial sw-004 succeeded"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("said no %q:\n%s", want, out.String())
		}
	}
	if got, err := os.ReadFile(filepath.Join(rundir.Path("sw"), rundir.Console)); err != nil || !strings.Contains(string(got), "tfhive: trial sw-002 started") {
		t.Errorf("the sweep's console.log: %q, %v", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(rundir.Path("sw-002"), rundir.Console)); err != nil || string(got) != "hello from sw-002\n" {
		t.Errorf("trial sw-002's console.log: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(rundir.Path("sw"), rundir.Sweep)); err != nil {
		t.Error(err)
	}
}

// kill's word (AskStop) stops the sweep: the trial under way is stopped,
// none starts after it, and a trial stopped before it started leaves no
// log dir.
func TestRunStopsWhenAskedTo(t *testing.T) {
	rec := grid(t, "sk", "1", "2", "3")
	var calls atomic.Int32
	var out testkit.SyncBuffer
	var ended End
	err := Run(context.Background(), Spec{Record: rec, MaxParallel: 1, Say: &out}, Hooks{
		EndLine: endLine,
		Trial: func(ctx context.Context, tr Trial) (*record.Summary, error) {
			calls.Add(1)
			if asked, err := AskStop(rundir.Path("sk")); !asked || err != nil {
				t.Errorf("AskStop of a sweep under way: %v, %v", asked, err)
			}
			<-ctx.Done() // as a trial waiting its turn in the hosts' queue
			return nil, context.Cause(ctx)
		},
		End: func(_ io.Writer, e End) error { ended = e; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || !ended.Stopped || ended.Interrupted {
		t.Errorf("%d trials started, end %+v", calls.Load(), ended)
	}
	if _, err := os.Lstat(rundir.Path("sk-001")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the trial stopped while it waited left its log dir: %v", err)
	}
	for _, want := range []string{"tfhive: sweep sk: tfhive kill asked it to stop; stopping its trials", "tfhive: trial sk-001 not started: the sweep was stopped while it waited"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("said no %q:\n%s", want, out.String())
		}
	}
	if asked, err := AskStop(rundir.Path("sk")); asked || err != nil {
		t.Errorf("AskStop of an ended sweep: %v, %v", asked, err)
	}
}

// A signal to the sweep stops every trial under way, through each
// trial's own signals, and the sweep ends interrupted.
func TestRunStopsTrialsOnASignal(t *testing.T) {
	rec := grid(t, "si", "1", "2")
	sigs := job.NewSignals(func(error) { t.Error("the sweep's context was cancelled: its trials are to be stopped") })
	var entered sync.WaitGroup
	entered.Add(2)
	go func() {
		entered.Wait()
		sigs.Deliver(os.Interrupt)
	}()
	var ended End
	err := Run(context.Background(), Spec{Record: rec, MaxParallel: 2, Say: io.Discard, Signals: sigs}, Hooks{
		EndLine: endLine,
		Trial: func(ctx context.Context, tr Trial) (*record.Summary, error) {
			tr.Started()
			entered.Done()
			<-ctx.Done()
			return &record.Summary{RunID: tr.ID, Result: record.ResultInterrupted}, nil
		},
		End: func(_ io.Writer, e End) error { ended = e; return nil },
	})
	if err != nil || !ended.Interrupted {
		t.Errorf("%v, end %+v", err, ended)
	}
}

// A sweep whose lock another tfhive holds is refused, untouched.
func TestRunRefusesASweepUnderWay(t *testing.T) {
	rec := grid(t, "sr", "1")
	if err := rundir.Make(rundir.Path("sr")); err != nil {
		t.Fatal(err)
	}
	release, err := rundir.HoldLock(rundir.Path("sr"))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	err = Run(context.Background(), Spec{Record: rec, MaxParallel: 1, Say: io.Discard}, Hooks{
		Trial: func(context.Context, Trial) (*record.Summary, error) { t.Error("a trial ran"); return nil, nil },
	})
	if !errors.Is(err, ErrRunning) {
		t.Errorf("%v, want ErrRunning", err)
	}
}
