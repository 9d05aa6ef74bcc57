package commands

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// ReserveOptions are `tfhive reserve`'s.
type ReserveOptions struct {
	Streams
	Hosts HostOptions
	// GPUs is --gpus N (0: --gpu given instead); GPU the --gpu HOST:I,J
	// values.
	GPUs int
	GPU  []string
	From string // --from, as written ("now" when not given)
	For  string // --for
	Note string
	// Now and Zone are the clock and the zone times are read in; zero:
	// time.Now and time.Local (tests give their own).
	Now  func() time.Time
	Zone *time.Location
}

// Reserve books GPUs on a host for a window: a file in its claims dir
// that every tfhive plan honours (probe/inventory's Booking). It checks
// the window against the host's reservations: policy and the
// reservations there, makes the file, then probes again: of two made at
// once the earlier made holds, and the other is taken back.
func Reserve(ctx context.Context, o ReserveOptions) error {
	now, zone := time.Now, time.Local
	if o.Now != nil {
		now = o.Now
	}
	if o.Zone != nil {
		zone = o.Zone
	}
	if (o.GPUs > 0) == (len(o.GPU) > 0) {
		return &UsageError{Msg: "give --gpus N or --gpu HOST:I,J", Fix: "tfhive reserve --gpus 2 --from 14:00 --for 4h"}
	}
	if o.GPUs < 0 || o.GPUs > inventory.MaxBookingGPUs {
		return usagef("--gpus must be 1 to %d, got %d", inventory.MaxBookingGPUs, o.GPUs)
	}
	if o.For == "" {
		return &UsageError{Msg: "give the reservation's length with --for", Fix: "--for 4h, --for 90m, --for 2d"}
	}
	d, err := schedule.ParseFor(o.For)
	if err != nil {
		return usagef("--for %v", err)
	}
	if o.From == "" {
		o.From = "now"
	}
	t0 := now()
	from, err := schedule.ParseWhen(o.From, t0, zone)
	if err != nil {
		return err
	}
	// Checked before any host is touched (a host's probe takes seconds,
	// and checked again after it).
	if from.Add(d).Before(t0) {
		return usagef("the window %s to %s has ended already", schedule.When(from, t0), schedule.When(from.Add(d), t0))
	}
	if err := inventory.CheckBookingNote(o.Note); err != nil {
		return &UsageError{Msg: fmt.Sprintf("--note %q %v", o.Note, err),
			Fix: fmt.Sprintf("--note must be one line of at most %d bytes of UTF-8, with no control or bidi character", inventory.MaxBookingNote)}
	}
	want, err := parseGPUPicks(o.GPU)
	if err != nil {
		return err
	}
	if n := len(worstBookingName(o.GPUs, want, from, from.Add(d), o.Note)); n > 255 {
		return &UsageError{Msg: fmt.Sprintf("the reservation's file name could be %d bytes, over the 255 a file name may have", n),
			Fix: "reserve fewer GPUs, or give a shorter --note"}
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeGPUs)
	if err != nil {
		return err
	}
	defer fleet.Close()
	// Every host --gpu names is one of the hosts, before any is dialled.
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !slices.ContainsFunc(fleet.Hosts, func(h inventory.Host) bool { return h.Name == name }) {
			return noSuchHost(name)
		}
	}
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return err
	}
	t := now()
	b := inventory.Booking{From: from, Until: from.Add(d), Note: o.Note, Made: t}
	if b.Until.Before(t) {
		return usagef("the window %s to %s has ended already", schedule.When(b.From, t), schedule.When(b.Until, t))
	}
	picks, err := pickGPUs(inv, want, o.GPUs, b)
	if err != nil {
		return err
	}
	for _, h := range inv.Hosts {
		if h.Err != nil {
			fmt.Fprintf(o.Stderr, "tfhive: warning: %s not used: %s\n", h.Name, h.Err.Message)
		}
	}
	// Everything is checked before anything is made: a reservation over
	// several hosts is all or nothing.
	made := map[int]inventory.Booking{}
	for _, i := range slices.Sorted(mapKeysInt(picks)) {
		h := &inv.Hosts[i]
		nb := b
		nb.ID, nb.User, nb.GPUs = newBookingID(), h.Me, picks[i]
		// worstBookingName reckoned with a host of at most 64 GPUs; a
		// bigger one's indexes may be longer.
		if len(inventory.BookingName(nb)) > 255 {
			return usagef("%s: the reservation's file name would be over 255 bytes: reserve fewer GPUs, or a shorter --note", h.Name)
		}
		if err := checkBooking(h, nb, t); err != nil {
			return err
		}
		made[i] = nb
	}
	var done []int
	// undo takes back what was made, as far as it can: a host whose link
	// the probe again dropped is dialled again, and one that cannot be is
	// left (its line says so).
	undo := func() {
		for _, i := range done {
			ex := fleet.Executor(i)
			if ex == nil {
				var err error
				if ex, err = fleet.Redial(ctx, inv.Hosts[i].Name); err != nil {
					continue
				}
			}
			hostops.Reserve(ctx, ex, "", []string{inventory.BookingName(made[i])})
		}
	}
	for _, i := range slices.Sorted(mapKeysInt(made)) {
		h := &inv.Hosts[i]
		if err := hostops.Reserve(ctx, fleet.Executor(i), inventory.BookingName(made[i]), endedOf(h, t)); err != nil {
			undo()
			return fmt.Errorf("%s: could not make the reservation: %v", h.Name, err)
		}
		done = append(done, i)
	}
	// Probed again: the files as every plan now sees them. One made at
	// the same moment as another's that overlaps it loses to the earlier.
	again := fleet.Probe(ctx)
	// A host not reached again cannot say whether its file holds: exit
	// 4 (not 3: no other reservation was seen to hold the GPUs), each
	// such host named; the files are taken back where that can be done.
	lost := &UnreachableError{Total: len(done)}
	for _, i := range done {
		if herr := again.Hosts[i].Err; herr != nil {
			lost.Bad++
			lost.Lines = append(lost.Lines, fmt.Sprintf("%s: the reservation was made but could not be checked: %s; `tfhive reservations -H %s` says whether it is there (`tfhive unreserve %s` removes it)",
				inv.Hosts[i].Name, herr.Message, inv.Hosts[i].Name, made[i].ID))
		}
	}
	if lost.Bad > 0 {
		undo()
		return lost
	}
	for _, i := range done {
		var seen *inventory.Booking
		for k, x := range again.Hosts[i].Bookings {
			if x.ID == made[i].ID && x.User == made[i].User {
				seen = &again.Hosts[i].Bookings[k]
			}
		}
		if seen == nil || !seen.Honoured() {
			why := "it was not seen again"
			if seen != nil {
				why = seen.Ignored
			}
			undo()
			return &schedule.CapacityError{Msg: fmt.Sprintf("%s: reservation refused: %s", inv.Hosts[i].Name, why), Fix: "tfhive reservations lists what is reserved"}
		}
	}
	for _, i := range done {
		h, nb := &inv.Hosts[i], made[i]
		fmt.Fprintf(o.Stdout, "tfhive: reserved %s on %s for %s from %s until %s (reservation %s)\n", gpuWord(nb.GPUs), h.Name, nb.User,
			schedule.When(nb.From, t), schedule.When(nb.Until, t), nb.ID)
		for _, w := range inUse(h, nb, t) {
			fmt.Fprintf(o.Stderr, "tfhive: warning: %s\n", w)
		}
	}
	return nil
}

// checkBooking refuses nb on h: an overlap names the holder (exit 3:
// another window may do), the host's limits say which rule (exit 2).
func checkBooking(h *inventory.HostInventory, nb inventory.Booking, now time.Time) error {
	if h.Me == "" {
		return fmt.Errorf("%s did not say who we are there: cannot reserve", h.Name)
	}
	if o, both, ok := inventory.OverlapOf(h.Bookings, nb); ok {
		return &schedule.CapacityError{
			Msg: fmt.Sprintf("%s: %s already reserved by %s from %s until %s (reservation %s)", h.Name, gpuWord(both), o.User,
				schedule.When(o.From, now), schedule.When(o.Until, now), o.ID),
			Fix: "choose other GPUs (--gpu) or another window; tfhive reservations lists what is reserved",
		}
	}
	j := inventory.Judge{GroupsOf: probe.GroupsOf(h.PolicyContext), GPUs: probe.PhysicalGPUs(h.GPUs)}
	if h.Policy != nil {
		j.Policy = h.Policy.Reservations
	}
	if why := j.WhyNot(h.Bookings, nb, now); why != "" {
		return usagef("%s: reservation refused: %s", h.Name, why)
	}
	return nil
}

// parseGPUPicks reads --gpu HOST:I,J values.
func parseGPUPicks(vals []string) (map[string][]int, error) {
	out := map[string][]int{}
	for _, v := range vals {
		i := strings.LastIndex(v, ":")
		if i <= 0 || i == len(v)-1 {
			return nil, &UsageError{Msg: fmt.Sprintf("--gpu %q: want HOST:I,J", v), Fix: "--gpu gpu01:0,1"}
		}
		host, list := v[:i], v[i+1:]
		for _, s := range strings.Split(list, ",") {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || slices.Contains(out[host], n) {
				return nil, &UsageError{Msg: fmt.Sprintf("--gpu %q: %q is not a GPU index given once", v, s), Fix: "--gpu gpu01:0,1"}
			}
			out[host] = append(out[host], n)
		}
		if len(out[host]) > inventory.MaxBookingGPUs {
			return nil, usagef("--gpu %q: at most %d GPUs a host", v, inventory.MaxBookingGPUs)
		}
		slices.Sort(out[host])
	}
	return out, nil
}

// worstBookingName is the longest file name a reservation of these flags
// could have on any host, reckoned before one is reached: an ID of its
// width, the window's own times, the note, and the longest GPU list: the
// longest --gpu list, or for --gpus n the n highest indexes of a host of
// inventory.MaxBookingGPUs GPUs (the most one reservation may name).
func worstBookingName(n int, want map[string][]int, from, until time.Time, note string) string {
	var gpus []int
	for _, gs := range want {
		if len(gpuWord(gs)) > len(gpuWord(gpus)) {
			gpus = gs
		}
	}
	for g := inventory.MaxBookingGPUs - n; len(want) == 0 && g < inventory.MaxBookingGPUs; g++ {
		gpus = append(gpus, g)
	}
	return inventory.BookingName(inventory.Booking{ID: strings.Repeat("0", 8), From: from, Until: until, GPUs: gpus, Note: note})
}

// pickGPUs is the GPUs to reserve, by host position: --gpu's as given
// (every host named must be among the hosts), or --gpus N on the first
// host that has N it may reserve for b's window, the lowest free of a
// run now first (for a window that begins now).
func pickGPUs(inv inventory.Inventory, want map[string][]int, n int, b inventory.Booking) (map[int][]int, error) {
	picks := map[int][]int{}
	if len(want) > 0 {
		var named inventory.Inventory
		for _, name := range slices.Sorted(maps.Keys(want)) {
			i := slices.IndexFunc(inv.Hosts, func(h inventory.HostInventory) bool { return h.Name == name })
			if i < 0 {
				return nil, noSuchHost(name)
			}
			named.Hosts = append(named.Hosts, inv.Hosts[i])
			picks[i] = want[name]
		}
		// A host named that cannot be reached is exit 4, each named
		// with why, before anything else is said of the others.
		if err := job.Unreachable(named); err != nil {
			return nil, err
		}
		return picks, nil
	}
	var lines []string
	for i := range inv.Hosts {
		h := &inv.Hosts[i]
		if h.Err != nil {
			continue
		}
		var ok, busy []int
		for g := range probe.PhysicalGPUs(h.GPUs) {
			if _, _, taken := inventory.OverlapOf(h.Bookings, inventory.Booking{GPUs: []int{g}, From: b.From, Until: b.Until}); taken {
				continue
			}
			if !b.From.After(b.Made) && heldByOther(h, g) {
				busy = append(busy, g)
				continue
			}
			ok = append(ok, g)
		}
		ok = append(ok, busy...)
		if len(ok) >= n {
			picks[i] = slices.Sorted(slices.Values(ok[:n]))
			return picks, nil
		}
		lines = append(lines, fmt.Sprintf("%s: %d of its GPUs unreserved in that window", h.Name, len(ok)))
	}
	// A host not reached might have had them: exit 4, as plan's, not 3.
	if err := job.Unreachable(inv); err != nil {
		return nil, err
	}
	return nil, &schedule.CapacityError{Msg: fmt.Sprintf("no host has %d GPUs unreserved from %s for %s", n, schedule.When(b.From, b.Made), inventory.Hours(b.Until.Sub(b.From))),
		Fix: "ask for fewer GPUs or another window; tfhive reservations lists what is reserved", Lines: lines}
}

// noSuchHost is --gpu naming a host that is not among the hosts.
func noSuchHost(name string) error {
	return &UsageError{Msg: fmt.Sprintf("--gpu %s: no host %s among the hosts", name, name), Fix: "give it with -H too"}
}

// heldByOther says whether a run of another user holds GPU g of h now.
func heldByOther(h *inventory.HostInventory, g int) bool {
	return slices.ContainsFunc(h.Claims, func(c inventory.Claim) bool {
		return c.Kind == "gpu" && c.ID == g && c.Blocked == "" && c.User != h.Me
	})
}

// inUse warns of the runs of others that hold nb's GPUs as it begins:
// tfhive stops nothing (as TensorHive, it says so; a run that started
// before the reservation goes on).
func inUse(h *inventory.HostInventory, nb inventory.Booking, now time.Time) []string {
	if nb.From.After(now) {
		return nil
	}
	var out []string
	for _, c := range h.Claims {
		if c.Kind == "gpu" && c.Blocked == "" && c.User != h.Me && slices.Contains(nb.GPUs, c.ID) {
			who := c.User
			if c.RunID != "" {
				who += "'s run " + c.RunID
			}
			out = append(out, fmt.Sprintf("%s: GPU %d is held by %s now; tfhive does not stop it", h.Name, c.ID, who))
		}
	}
	return out
}

// endedOf are our reservation files on h whose window has ended: made
// again with each reservation, so that they do not pile up.
func endedOf(h *inventory.HostInventory, now time.Time) []string {
	var out []string
	for _, b := range h.Bookings {
		if b.User == h.Me && b.Ignored == "" && !b.Until.After(now) {
			out = append(out, b.File[strings.LastIndex(b.File, "/")+1:])
		}
	}
	return out
}

func newBookingID() string {
	var x [4]byte
	rand.Read(x[:])
	return hex.EncodeToString(x[:])
}

// gpuWord is "GPU 0" or "GPUs 0,1".
func gpuWord(gs []int) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = strconv.Itoa(g)
	}
	if len(gs) == 1 {
		return "GPU " + s[0]
	}
	return "GPUs " + strings.Join(s, ",")
}

func mapKeysInt[V any](m map[int]V) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
