package launcher

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/stacks"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/wording"
)

// Hang is --hang-after and --on-hang: a run whose tasks all stay silent
// for After has every task's stacks taken on every host at once
// (launcher/stacks) into the log dir, a `hang` event on its timeline,
// and a warning; with Stop, the run is then stopped as hung.
//
// Decisions:
//   - Silent is the whole run's: no byte from any task, on stdout or
//     stderr, for After. A progress bar's "\r" frames are output; so are
//     the lines a metric is captured from (--capture reads only output,
//     so a metric that changes has printed). A GPU busy at 100% is not
//     progress: NCCL spins on a collective that never returns.
//   - The clock starts when the tasks are told to go, and starts again
//     at each output, each restart of an attempt and each host back from
//     a reconnect; while a task waits between attempts (a backoff is
//     silent by design) or a host is being redialled (its tasks cannot
//     be heard), the run is not called hung.
//   - Once per silence: after a warning the run is watched again from
//     its next output.
//   - The stacks are taken before the stop: a stopped task's stack says
//     nothing.
type Hang struct {
	After  time.Duration // 0: never
	Stop   bool
	Native bool // py-spy dump --native
}

// MinHangAfter is the shortest --hang-after: silence shorter than a
// second is a task thinking.
const MinHangAfter = time.Second

// hangWatch is the run's silence clock.
type hangWatch struct {
	last atomic.Int64 // unix nanoseconds of the last output, restart or return
	// fired is last as it was when stacks were last taken: not again
	// until something is heard.
	fired  int64
	busy   bool
	result chan hangStacks
	cancel context.CancelFunc // the taking under way's
}

// hangStacks is one taking's result, back to the runner's loop.
type hangStacks struct {
	silent   time.Duration
	dir      string // the log dir's stacks/
	st       []stacks.Stack
	errs     map[string]error // by host
	writeErr error
}

// heard restarts the clock.
func (h *hangWatch) heard() {
	if h != nil {
		h.last.Store(time.Now().UnixNano())
	}
}

// hangTicker ticks the clock four times per --hang-after (at most every
// 5 s, at least every 250 ms), and the takings' results come on the
// second channel; both nil without --hang-after.
func (r *runner) hangTicker() (<-chan time.Time, <-chan hangStacks, func()) {
	if r.o.Hang.After <= 0 || r.p.Decided() {
		return nil, nil, func() {}
	}
	r.hang = &hangWatch{result: make(chan hangStacks, 1)}
	r.hang.heard()
	for _, rt := range r.tasks {
		if rt.out != nil {
			rt.out.watchSeen(&r.hang.last)
		}
	}
	t := time.NewTicker(min(max(r.o.Hang.After/4, 250*time.Millisecond), 5*time.Second))
	return t.C, r.hang.result, t.Stop
}

// checkHang takes the stacks once the run has been silent for
// --hang-after: in the background, over each host's connection.
func (r *runner) checkHang() {
	h := r.hang
	if h == nil || h.busy || r.p.Decided() {
		return
	}
	if r.links != nil && len(r.links.redo) > 0 {
		h.heard()
		return
	}
	for _, i := range r.p.Live() {
		if r.p.State(i).Between() {
			h.heard()
			return
		}
	}
	last := h.last.Load()
	silent := time.Since(time.Unix(0, last))
	if last == h.fired || silent < r.o.Hang.After {
		return
	}
	h.busy, h.fired = true, last
	execs := map[string]remote.Executor{}
	planned := map[string][]string{}
	for _, rt := range r.tasks {
		if ex := r.o.Execs[rt.t.Host]; ex != nil {
			execs[rt.t.Host] = ex
			planned[rt.t.Host] = append(planned[rt.t.Host], rt.t.ID)
		}
	}
	r.o.Console.Printf("tfhive: run %s: no task printed anything for %s; taking every task's stacks on %s",
		r.o.Plan.RunID, shortDur(silent), wording.Count(len(execs), "host"))
	ctx, cancel := context.WithTimeout(context.Background(), stacksWithin)
	h.cancel = cancel
	go func() {
		defer cancel()
		st, errs := stacks.Take(ctx, execs, r.o.Plan.RunID, stacks.Options{Native: r.o.Hang.Native, Parallel: r.o.Parallel, Planned: planned})
		header := fmt.Sprintf("run %s, silent for %s, taken %s\n", r.o.Plan.RunID, shortDur(silent), time.Now().UTC().Format(time.RFC3339))
		dir, werr := stacks.Write(r.o.LogDir, st, header)
		h.result <- hangStacks{silent: silent, dir: dir, st: st, errs: errs, writeErr: werr}
	}()
}

// endHang, as the run ends, stops a taking under way and waits for it:
// nothing is written into the log dir after the summary.
func (r *runner) endHang() {
	if r.hang == nil || !r.hang.busy {
		return
	}
	r.hang.cancel()
	<-r.hang.result
	r.hang.busy = false
}

// stacksWithin bounds a taking: every host at once, each tool 20 s a
// process (stacks.sh).
const stacksWithin = 2 * time.Minute

// hangTaken says what the stacks show, records the hang and, with
// --on-hang stop, stops the run. The run's own row comes first, with
// where its first task was: a notification sends one row of a kind a
// minute, and that one says the most.
func (r *runner) hangTaken(hs hangStacks) {
	r.hang.busy = false
	where := map[string]string{}
	for _, s := range hs.st {
		where[s.Task] = s.Where
	}
	rel := hs.dir // the log dir's stacks/
	for _, h := range slices.Sorted(maps.Keys(hs.errs)) {
		r.o.Console.Printf("tfhive: warning: stacks on %s: %v", h, hs.errs[h])
	}
	if hs.writeErr != nil {
		r.o.Console.Printf("tfhive: warning: writing the stacks: %v", hs.writeErr)
	}
	detail := fmt.Sprintf("no output for %s; stacks in %s", shortDur(hs.silent), rel)
	first := ""
	for _, rt := range r.tasks {
		if w := where[rt.t.ID]; w != "" && first == "" {
			first = "; " + rt.t.ID + " " + w
		}
	}
	r.timeline.Add("", "", record.EventHang, detail+first)
	for i, rt := range r.tasks {
		w, ok := where[rt.t.ID]
		if !ok {
			continue
		}
		rt.res.HungAt = w
		r.taskEvent(i, record.EventHang, w)
		if w != "" {
			r.o.Console.Printf("tfhive: run %s: %s %s", r.o.Plan.RunID, rt.t.ID, w)
		}
	}
	if !r.o.Hang.Stop || r.p.Decided() {
		r.o.Console.Printf("tfhive: warning: run %s looks hung: %s (--on-hang stop stops such a run)", r.o.Plan.RunID, detail)
		return
	}
	r.o.Console.Printf("tfhive: run %s hung: %s; stopping every task", r.o.Plan.RunID, detail)
	r.apply(lifecycle.Event{Kind: lifecycle.EvHung, After: r.o.Hang.After, Err: "stacks in " + rel})
}

// shortDur is a silence as people say it, in whole seconds (2s, 1m30s:
// a silence is at least --hang-after, never less), hundredths below one.
func shortDur(d time.Duration) string {
	if d < time.Second {
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Truncate(time.Second).String()
}

// watchSeen makes every write of the task's restart a's clock.
func (t *TaskOutput) watchSeen(a *atomic.Int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen = a
}
