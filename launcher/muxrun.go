package launcher

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"

	"github.com/tfhive/tfhive/launcher/supervisor"
	"golang.org/x/sync/errgroup"
)

// muxed: the run's tasks start through their hosts' multiplexers
// (mux.go). Kept runs only: a supervisor that lives and dies with its
// session needs a session of its own. An adopted run starts nothing.
func (r *runner) muxed() bool {
	return r.links != nil && !r.o.Adopted && !r.lim.sessionPerTask
}

// startMuxed starts every host's tasks through its multiplexer, hosts in
// parallel but bounded.
func (r *runner) startMuxed(ctx context.Context) {
	var hosts []string
	byHost := map[string][]int{}
	for i, rt := range r.tasks {
		if byHost[rt.t.Host] == nil {
			hosts = append(hosts, rt.t.Host)
		}
		byHost[rt.t.Host] = append(byHost[rt.t.Host], i)
	}
	var g errgroup.Group
	g.SetLimit(max(r.o.Parallel, 1))
	ms := make([]*hostMux, len(hosts))
	for k, h := range hosts {
		g.Go(func() error {
			m, err := r.startHost(ctx, h, byHost[h])
			if err != nil {
				for _, i := range byHost[h] {
					r.tasks[i].startErr = err
				}
			}
			ms[k] = m
			return nil
		})
	}
	g.Wait()
	r.muxes = map[string]*hostMux{}
	for k, m := range ms {
		if m != nil {
			r.muxes[hosts[k]] = m
		}
	}
}

// startHost starts host's tasks (their indexes) through one multiplexer,
// which it returns once they are.
func (r *runner) startHost(ctx context.Context, host string, idx []int) (*hostMux, error) {
	ex := r.o.Execs[host]
	if ex == nil {
		return nil, fmt.Errorf("no connection to %s", host)
	}
	m := newHostMux(rand.Text())
	type started struct {
		i       int
		p       *muxProc
		input   string
		said    *supervisor.FirstByte
		tap     *supervisor.PreemptTap
		errGate *supervisor.StreamGate
		tk      supervisor.Task
	}
	var ss []started
	for _, i := range idx {
		rt := r.tasks[i]
		if err := r.openOutput(rt); err != nil {
			return nil, err
		}
		tk := r.taskFor(rt.t)
		tk.Mux, tk.Mark = true, r.mark
		tk.FirstAttempt = r.p.State(i).Attempt
		if r.firstOnHost(i) {
			tk.RunInfo = runInfoOf(r.o.Plan, r.o.Restart, r.mark)
		}
		var stdout, soNext io.Writer = rt.out.Stdout(), rt.out.Stdout()
		if tk.Restarts {
			// The attempt lines in the task's stdout count only where
			// the supervisor's records, on its own stdout, put them.
			rt.filter = r.attemptFilter(i, stdout)
			rt.filter.Placed()
			stdout = rt.filter
			soNext = supervisor.NewAttemptRecords(soNext, r.mark, rt.filter)
		}
		// Past the claim line, the supervisor's own stdout and stderr
		// (a replaced keeper's line) are noise on the task's; the task's
		// files are counted from their first byte. The preemption line
		// comes on the supervisor's stderr (supervisor-run.sh).
		var noise int64
		so := &supervisor.ClaimGate{Next: soNext, Report: rt.reportClaim}
		tap := r.preemptTap(&supervisor.StreamGate{Next: rt.out.Stderr(), N: &noise, Replaced: r.links.sayReplaced, Passed: true}, &rt.preempted)
		out := &supervisor.StreamGate{Next: stdout, N: &rt.outN, Passed: true}
		errGate := &supervisor.StreamGate{Next: rt.out.Stderr(), N: &rt.errN, Replaced: r.links.sayReplaced, Passed: true}
		p := m.add(rt.t.ID, so, tap, out, errGate, &rt.truncated)
		ss = append(ss, started{i: i, p: p, input: supervisor.Input(tk), said: supervisor.NewFirstByte(), tap: tap, errGate: errGate, tk: tk})
	}
	if err := m.open(ctx, ex, r.o.Plan.RunID, r.o.Relaunch == nil); err != nil {
		return nil, err
	}
	for _, s := range ss {
		if err := m.start(s.p, s.input); err != nil {
			err = m.startErr(err)
			m.proc.Close()
			return nil, err
		}
	}
	if err := m.follow(); err != nil {
		err = m.startErr(err)
		m.proc.Close()
		return nil, err
	}
	for _, s := range ss {
		rt := r.tasks[s.i]
		rt.proc = s.p
		s.said.LoggedIn(s.p)
		r.watch(s.i, rt, s.p, s.said, s.tap, s.errGate, s.tk.HeartbeatTimeout, ex)
	}
	return m, nil
}
