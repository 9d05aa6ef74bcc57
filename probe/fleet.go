// Package probe learns what each host has (GPUs, processes, listening
// ports, network interfaces, claims) over one SSH connection per host, and
// keeps those connections for the tasks (Fleet). It must not import schedule or
// launcher: data flows probe → schedule → launcher.
package probe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/transport"
)

// Defaults for Options.
const (
	DefaultCommandTimeout = 30 * time.Second
	DefaultParallel       = 64
)

// Options tune a Fleet.
type Options struct {
	SSH transport.Options
	// CommandTimeout bounds the probe on each host (nvidia-smi included).
	CommandTimeout time.Duration
	// Parallel bounds how many hosts are dialled and probed at once.
	Parallel int
	// Progress, when set, is called as hosts finish (done of total).
	Progress func(done, total int)
	// ClaimsOnly skips nvidia-smi: for commands that only need claims.
	ClaimsOnly bool
	// Then, when set, is a one-line command each host's probe session goes
	// on with once the probe is done, typically waiting on its stdin. The
	// session is kept as a spare (remote.Spares): the first
	// Executor.Start of this same command on the host gets it, already
	// running, instead of a new session. A later Probe (as each host's
	// new spare replaces its old one) or Close ends the spares not taken.
	Then string
	// Code, when set, is the content hash of a --sync tree: the probe
	// also says whether each host has it, and where (CodeDir).
	Code string
	// Runs: the probe also reads what the user's kept runs' directories
	// say of the runs holding claims (HostInventory.Kept), for tfhive ps,
	// and the claimed GPUs' live utilisation (HostInventory.GPUUse).
	Runs bool
	// NoLiveUse: with Runs, no live utilisation query (a second
	// nvidia-smi): for status, whose report has each GPU's use already.
	NoLiveUse bool
	// Clones: warn, once, of hosts that report one machine id from
	// process tables of their own (warnClones): for the commands that
	// show the hosts (status, plan, doctor), not for every run.
	Clones bool
	// Dial, when set, opens every host's connection (Probe's and
	// Redial's), the local host's too, instead of the SSH transport and
	// this machine's sh: a test's fake hosts (probe/hosttest). Its
	// HostError is the host's probe error, as a failed SSH dial's is.
	// nil: the real transport.
	Dial Dialer
	// Coalesce, when set, shares this fleet's probes with the other
	// fleets given the same Coalescer (a sweep's trials): see Coalescer.
	Coalesce *Coalescer
}

// Dialer opens host h's connection, for Options.Dial.
type Dialer func(ctx context.Context, h inventory.Host) (remote.Executor, *inventory.HostError)

// Fleet holds one connection per host for the whole run: opened by the
// first Probe, reused by later probes and by the launcher, closed by Close.
type Fleet struct {
	Hosts  []inventory.Host
	opts   Options
	dialer *transport.Dialer
	spares *remote.Spares
	// coalesced: a probe of this fleet was asked of Options.Coalesce
	// (only its first may take a seed, Coalescer.Seed).
	coalesced atomic.Bool

	mu    sync.Mutex
	execs []remote.Executor
	// lender is the Coalescer's fleet whose probe this one adopted last:
	// its spares are this fleet's to take too, by host index (the same
	// hosts, in the same order: probeKey); nil for a seed's.
	lender *Fleet
	// left are the hosts taken out of later probes (Leave), with why.
	left   map[int]string
	warned map[string]bool
}

// warnOnce says whether msg is new: a waiting run probes again and again,
// and says each thing once.
func (f *Fleet) warnOnce(msg string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.warned[msg] {
		return false
	}
	if f.warned == nil {
		f.warned = map[string]bool{}
	}
	f.warned[msg] = true
	return true
}

// warnOf says, once, what is wrong with host hi that does not fail it:
// its policy ignored, its reservations not all known.
func (f *Fleet) warnOf(hi *inventory.HostInventory) {
	if f.opts.SSH.Warn == nil {
		return
	}
	for _, w := range []string{hi.PolicyWarning, hi.BookingsUnknown} {
		if w != "" && f.warnOnce(hi.Name+w) {
			f.opts.SSH.Warn(hi.Name + ": " + w)
		}
	}
}

// SetDefaults fills in what o leaves unset.
func (o *Options) SetDefaults() {
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	o.SSH.SetDefaults()
}

// NewFleet returns a fleet of hosts; nothing is dialled before Probe.
func NewFleet(hs []inventory.Host, o Options) *Fleet {
	o.SetDefaults()
	return &Fleet{Hosts: hs, opts: o, dialer: transport.NewDialer(o.SSH), execs: make([]remote.Executor, len(hs)),
		spares: remote.NewSpares(len(hs))}
}

// KeepSessions sets Options.Then; call it before the first Probe.
func (f *Fleet) KeepSessions(then string) { f.opts.Then = then }

// LookForCode sets Options.Code; call it before the first Probe.
func (f *Fleet) LookForCode(hash string) { f.opts.Code = hash }

// LookForRuns sets Options.Runs; call it before the first Probe.
func (f *Fleet) LookForRuns() { f.opts.Runs = true }

// LookForRunsOnly sets Options.Runs and NoLiveUse; call it before the
// first Probe.
func (f *Fleet) LookForRunsOnly() { f.opts.Runs, f.opts.NoLiveUse = true, true }

// SayClones makes later probes warn of clones (Options.Clones).
func (f *Fleet) SayClones() { f.opts.Clones = true }

// NoProgress unsets Options.Progress (a waiting run's line says more);
// call it between probes.
func (f *Fleet) NoProgress() { f.opts.Progress = nil }

// Executor returns host i's open connection, or nil if it has none.
func (f *Fleet) Executor(i int) remote.Executor {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.execs[i] != nil && f.opts.Then != "" {
		e := f.execs[i]
		if l := f.lender; l != nil && l.opts.Then == f.opts.Then {
			e = l.spares.Executor(i, e)
		}
		return f.spares.Executor(i, e)
	}
	return f.execs[i]
}

// KeepAlive is host h's keepalive interval and count (see hosts.KeepAlive).
func (f *Fleet) KeepAlive(h inventory.Host) (time.Duration, int) { return hosts.KeepAlive(h) }

// KeepSpares ends the spares of every host not named in keep: a run's
// hosts without a task should not hold an idle session for its length.
func (f *Fleet) KeepSpares(keep []string) {
	for i, h := range f.Hosts {
		if !slices.Contains(keep, h.Name) {
			f.spares.Drop(i)
		}
	}
}

// Leave takes the named host out of every later Probe, which reports it
// unusable for why: a host lost during a run is not planned on again,
// nor waited for. Its connection is closed.
func (f *Fleet) Leave(name, why string) {
	i := slices.IndexFunc(f.Hosts, func(h inventory.Host) bool { return h.Name == name })
	if i < 0 {
		return
	}
	f.mu.Lock()
	if f.left == nil {
		f.left = map[int]string{}
	}
	f.left[i] = why
	old := f.execs[i]
	f.execs[i] = nil
	f.mu.Unlock()
	f.spares.Drop(i)
	if old != nil {
		old.Close()
	}
}

// Close closes every connection.
func (f *Fleet) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spares.DropAll()
	for i, e := range f.execs {
		if e != nil {
			e.Close()
			f.execs[i] = nil
		}
	}
	f.dialer.Close()
}

// Probe connects to every host not yet connected and probes them all, in
// parallel and bounded. It always returns a full inventory: a host that
// failed carries its error, and the others are not held up by it.
func (f *Fleet) Probe(ctx context.Context) inventory.Inventory {
	if c := f.opts.Coalesce; c != nil {
		shared, lender, err := c.probe(ctx, f)
		f.mu.Lock()
		f.lender = lender
		f.mu.Unlock()
		inv := f.adopt(ctx, shared, err)
		f.warnClones(inv)
		return inv
	}
	// Each host's spare stays until its probe's new one replaces it, or
	// the probe fails (Spares.RunKeeping; a host left out lost its own
	// with Leave): a Coalescer's, lent to other fleets, may be taken while
	// the next probe runs.
	inv := inventory.Inventory{Hosts: make([]inventory.HostInventory, len(f.Hosts))}
	var g errgroup.Group
	g.SetLimit(f.opts.Parallel)
	var done atomic.Int32
	for i := range f.Hosts {
		g.Go(func() error {
			inv.Hosts[i] = f.probeHost(ctx, i)
			if f.opts.Progress != nil {
				f.opts.Progress(int(done.Add(1)), len(f.Hosts))
			}
			return nil
		})
	}
	g.Wait()
	f.warnClones(inv)
	return inv
}

func (f *Fleet) connect(ctx context.Context, i int) (remote.Executor, *inventory.HostError) {
	f.mu.Lock()
	e := f.execs[i]
	f.mu.Unlock()
	if e != nil {
		return e, nil
	}
	h := f.Hosts[i]
	e = remote.Local{}
	switch {
	case f.opts.Dial != nil:
		c, herr := f.opts.Dial(ctx, h)
		if herr != nil {
			return nil, herr
		}
		e = c
	case !h.Local:
		c, herr := remote.Dial(ctx, f.dialer, h)
		if herr != nil {
			return nil, herr
		}
		e = c
	}
	f.mu.Lock()
	f.execs[i] = e
	f.mu.Unlock()
	return e, nil
}

// Redial replaces the named host's connection with a new one: for a run
// whose link dropped. The old one is closed first (its sessions, if any
// still run, end), and the new one has no spare session.
func (f *Fleet) Redial(ctx context.Context, name string) (remote.Executor, error) {
	i := slices.IndexFunc(f.Hosts, func(h inventory.Host) bool { return h.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("no host %s", name)
	}
	f.mu.Lock()
	old := f.execs[i]
	f.execs[i] = nil
	f.mu.Unlock()
	f.spares.Drop(i)
	if old != nil {
		old.Close()
	}
	e, herr := f.connect(ctx, i)
	if herr != nil {
		return nil, herr
	}
	return e, nil
}

// forget drops a connection that failed, so that the next Probe redials.
func (f *Fleet) forget(i int, e remote.Executor) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.execs[i] == e {
		e.Close()
		f.execs[i] = nil
	}
	f.spares.Drop(i)
}

func (f *Fleet) probeHost(ctx context.Context, i int) inventory.HostInventory {
	h := f.Hosts[i]
	hi := inventory.HostInventory{Host: h, Name: h.Name, ClusterAddress: h.ClusterAddress, GPUs: []inventory.GPU{}, ListeningPorts: []int{}, Claims: []inventory.Claim{}}
	f.mu.Lock()
	why, left := f.left[i]
	f.mu.Unlock()
	if left {
		hi.Err = &inventory.HostError{Kind: inventory.ErrLost, Message: why}
		return hi
	}
	e, herr := f.connect(ctx, i)
	if herr != nil {
		f.spares.Drop(i)
		hi.Err = herr
		return hi
	}
	// The host's own timeout stops nvidia-smi; ours, a little later, stops
	// waiting for a host whose shell itself is stuck.
	cctx, cancel := context.WithTimeout(ctx, f.opts.CommandTimeout+5*time.Second)
	defer cancel()
	// A keeper heard from within the window tfhive itself gives a silent
	// link before it takes it as dead is attached.
	var window time.Duration
	if f.opts.Runs {
		every, count := hosts.KeepAlive(h)
		window = every * time.Duration(max(count, 2))
	}
	cmd := probeCommand(f.opts.CommandTimeout, f.opts.ClaimsOnly, f.opts.Code, window, !f.opts.NoLiveUse, f.opts.Then)
	var stdout, stderr []byte
	var rc int
	var err error
	if f.opts.Then == "" {
		// Bounded as RunKeeping's: a host printing without end (200 MB
		// of nvidia-smi, a 3M-line ss) is stopped at the bound.
		rc, stdout, stderr, err = remote.RunBounded(cctx, e, cmd, nil, remote.MaxHeld, 64<<10)
	} else {
		rc, stdout, stderr, err = f.spares.RunKeeping(cctx, i, e, cmd, markEnd, f.opts.Then)
	}
	switch {
	case errors.Is(err, remote.ErrTooMuchOutput):
		// The host's output is unknown past the bound: it fails closed.
		f.spares.Drop(i)
		hi.Err = &inventory.HostError{Kind: inventory.ErrCommand, Message: fmt.Sprintf(
			"probe output passed %d MiB (a tool on the host printing without end?): the host is not used", remote.MaxHeld>>20)}
		return hi
	case err != nil && cctx.Err() != nil && ctx.Err() == nil:
		f.forget(i, e)
		hi.Err = &inventory.HostError{Kind: inventory.ErrTimeout, Message: fmt.Sprintf("probe timed out after %s", f.opts.CommandTimeout+5*time.Second)}
		return hi
	case err != nil:
		f.forget(i, e)
		hi.Err = &inventory.HostError{Kind: inventory.ErrSSH, Message: err.Error()}
		return hi
	case rc != 0:
		hi.Err = &inventory.HostError{Kind: inventory.ErrCommand, Message: fmt.Sprintf("probe script failed (exit %d): %s", rc, excerpt(stderr))}
		return hi
	}
	po, err := splitProbeOutput(stdout)
	if err != nil {
		f.spares.Drop(i)
		hi.Err = &inventory.HostError{Kind: inventory.ErrCommand, Message: err.Error()}
		return hi
	}
	if po.claims.overflow {
		// Some GPU's claim may be among the names not listed: none of
		// them may be taken as free.
		f.spares.Drop(i)
		hi.Err = &inventory.HostError{Kind: inventory.ErrCommand, Message: fmt.Sprintf(
			"claims dir %s holds more than %d tfhive-claim lock files: its claims are unknown, so none of its GPUs is used",
			po.claims.dir, MaxLockFiles)}
		return hi
	}
	books := parseBookings(po.claims.files, po.claims.dir)
	if books.overflow {
		unknown := fmt.Sprintf("claims dir %s holds more than %d tfhive-reservation files: its reservations are unknown",
			po.claims.dir, MaxBookingFiles)
		if !f.opts.ClaimsOnly {
			// A reservation may be among the names not listed: no GPU of
			// the host may be taken as unreserved.
			f.spares.Drop(i)
			hi.Err = &inventory.HostError{Kind: inventory.ErrCommand, Message: unknown + ", so none of its GPUs is used"}
			return hi
		}
		// A claims-only probe (ps, kill, stop, stacks, unreserve) plans
		// nothing: anyone's flood of empty files must not keep us from
		// our own runs there. What was listed is kept, said to be a part.
		hi.BookingsUnknown = unknown
	}
	var smi smiFacts
	if !f.opts.ClaimsOnly {
		smi = parseSMI(po.smiExit, po.smi, f.opts.CommandTimeout)
	}
	fillOwners(smi.GPUs, parsePS(po.ps))
	hi.Driver, hi.CUDA, hi.DriverError, hi.NoNvidiaSMI = smi.Driver, smi.CUDA, smi.DriverError, smi.NoNvidiaSMI
	if smi.GPUs != nil {
		hi.GPUs = smi.GPUs
	}
	if ports := parseListeningPorts(po.tcp); ports != nil {
		hi.ListeningPorts = ports
	}
	hi.Interfaces = parseInterfaces(po.nic)
	var gpuIndex map[string]int
	if !f.opts.ClaimsOnly {
		gpuIndex = map[string]int{}
		for _, g := range hi.GPUs {
			if g.UUID != "" {
				gpuIndex[g.UUID] = g.Index
			}
		}
	}
	po.claims.held = parseHolders(po.claims.holders)
	now := time.Now()
	if claims := parseClaims(po.claims, gpuIndex, now); claims != nil {
		hi.Claims = claims
	}
	hi.Policy, hi.PolicyContext, hi.PolicyWarning, hi.PolicyError = policyOf(po.policy)
	hi.Me, hi.Probed = books.me, now
	hi.Bookings = judgeBookings(&hi, books.bookings)
	markIntruders(hi.GPUs, hi.Claims, parseAncestors(po.ps), reservedAt(hi.Bookings, now))
	f.warnOf(&hi)
	hi.MachineID, hi.ProcessTable, hi.ClaimsDir = po.claims.machineID, po.claims.processTable, po.claims.dir
	hi.Tickets = parseTickets(po.claims, now)
	hi.CodeDir, hi.CodePresent = parseCode(po.code, f.opts.Code)
	if f.opts.Runs {
		runs, use := cutUtil(po.runs)
		hi.Kept = parseRuns(runs, po.claims.locks)
		hi.GPUUse = use
	}
	return hi
}
