package launcher

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/schedule"
)

// sampler is one host's sampler: in the host's multiplexer (a kept
// run's, mux.go), else in a session of its own.
type sampler struct {
	stop func()          // EOF on its stdin: it ends at once
	kill func()          // its session closed
	done <-chan struct{} // closed once its output is read and it ended
}

// startSamplers starts one sampler per host with GPU tasks, once the
// tasks were told to go (--sample): in the host's multiplexer, which
// costs no login, or over the host's connection in a session of its own
// (a run whose tasks have a session each: --reconnect 0, an adopted run).
func (r *runner) startSamplers() {
	if r.o.Sample <= 0 {
		return
	}
	r.usage = newUsageBook(filepath.Join(r.o.LogDir, rundir.GPUUsage), r.lim.idleFor, func(i int, line string) {
		t := r.tasks[i].t
		r.o.Console.Printf("tfhive: %s on %s: %s", t.ID, t.Host, line)
	})
	r.usage.csv.appends = r.o.Relaunch != nil
	r.samplers = map[string]*sampler{}
	for i, rt := range r.tasks {
		if gpus := sampledGPUs(rt.t); len(gpus) > 0 {
			r.usage.addTask(i, rt.t.ID, rt.t.Host, gpus)
		}
	}
	for host := range r.usage.byHost {
		r.startSampler(host)
	}
}

// startSampler starts host's sampler: again after a reconnect, the last
// one having ended with its link. Only the first start may be the
// multiplexer's: after a reconnect each task is followed by a session of
// its own (attach.sh), and so is the sampler.
func (r *runner) startSampler(host string) {
	if r.usage == nil || r.usage.byHost[host] == nil {
		return
	}
	if old := r.samplers[host]; old != nil {
		select {
		case <-old.done:
		default:
			return
		}
	}
	ex := r.o.Execs[host]
	if ex == nil {
		return
	}
	gpus := slices.Sorted(mapKeys(r.usage.byHost[host]))
	lw := &sampleLines{host: host, book: r.usage}
	if m := r.muxes[host]; m != nil {
		// A multiplexer that cannot take it has ended: with every task
		// it started (nothing left to sample there), or with its link,
		// and then the host's return starts the sampler again.
		delete(r.muxes, host)
		if m.sample(lw, supervisor.SampleInput(gpus, r.o.Sample, r.o.Plan.RunID, m.sampleTag())) == nil {
			r.samplers[host] = &sampler{stop: m.stopSample, kill: func() { m.proc.Close() }, done: m.sampled}
		}
		return
	}
	proc, err := ex.Start(context.Background(), supervisor.Command, lw, io.Discard)
	if err != nil {
		return
	}
	if err := supervisor.WriteChunked(proc.Stdin(), supervisor.SampleInput(gpus, r.o.Sample, r.o.Plan.RunID, "")); err != nil {
		proc.Close()
		return
	}
	done := make(chan struct{})
	r.samplers[host] = &sampler{stop: func() { proc.Stdin().Close() }, kill: func() { proc.Close() }, done: done}
	go func() {
		proc.Wait()
		lw.end()
		close(done)
	}()
}

// stopSamplers ends every sampler: EOF on its stdin ends its loop at
// once; those whose hosts do not answer within giveUp are abandoned.
func (r *runner) stopSamplers() {
	for _, s := range r.samplers {
		s.stop()
	}
	deadline := time.NewTimer(r.lim.giveUp)
	defer deadline.Stop()
	expired := false
	for _, s := range r.samplers {
		if !expired {
			select {
			case <-s.done:
				continue
			case <-deadline.C:
				expired = true
			}
		}
		select {
		case <-s.done:
		default:
			s.kill()
			<-s.done
		}
	}
	r.samplers = nil
	if r.usage != nil {
		r.usage.close()
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// sampleLines splits a sampler's output into samples: a marker line
// starts one, stamped with its arrival; the CSV lines after it are its.
type sampleLines struct {
	host   string
	book   *usageBook
	buf    []byte
	at     time.Time // the current sample's time; zero before the first marker
	inside bool
}

func (w *sampleLines) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.line(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 4096 {
		w.buf = w.buf[:0] // no line of nvidia-smi's is this long
	}
	return len(p), nil
}

func (w *sampleLines) line(s string) {
	s = strings.TrimSuffix(s, "\r")
	if s == supervisor.SampleMarker {
		w.end()
		w.at, w.inside = time.Now(), true
		return
	}
	if !w.inside {
		return // a login shell's greeting
	}
	if rest, ok := strings.CutPrefix(s, supervisor.IntruderMarker+" "); ok {
		if in, ok := parseIntruder(rest); ok {
			w.book.intruder(w.host, in)
		}
		return
	}
	if row, ok := parseGPURow(s); ok {
		w.book.row(w.host, w.at, row)
	}
}

// end closes the current sample.
func (w *sampleLines) end() {
	if w.inside {
		w.book.endSample(w.host, w.at)
	}
	w.inside = false
}

// sampledGPUs are the GPUs of t that nvidia-smi --query-gpu -i can name:
// not a MIG instance, whose index is tfhive's own and whose utilisation
// nvidia-smi does not report.
func sampledGPUs(t schedule.Task) []int {
	var out []int
	for i, g := range t.GPUs {
		if i < len(t.GPUUUIDs) && strings.HasPrefix(t.GPUUUIDs[i], "MIG-") {
			continue
		}
		out = append(out, g)
	}
	return out
}
