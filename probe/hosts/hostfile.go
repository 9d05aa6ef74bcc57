package hosts

import (
	"fmt"
	"strconv"
	"strings"
)

// parseHostfile reads an MPI-style hostfile (--hostfile), the format
// OpenMPI's mpirun, DeepSpeed and horovodrun read: one host a line,
//
//	gpu01 slots=4            # OpenMPI, DeepSpeed, horovodrun
//	gpu02 slots=4 max_slots=8
//	gpu03:2                  # MPICH, horovodrun -H: here too slots, not a port
//	gpu[04-07] slots=8       # a pdsh/ClusterShell range: one line per host
//	gpu08                    # no slots: all of its GPUs
//
// with # comments and blank lines. slots caps the GPUs a run uses on the
// host (a slot is a process, and a tfhive task process gets its GPUs);
// max_slots, OpenMPI's ceiling for oversubscription, is accepted and
// checked but changes nothing, as tfhive never puts two tasks on one GPU.
// Other keys are refused: they would mean something tfhive does not do.
// The port, user and keys come from the ssh config, as for -H.
func parseHostfile(name string, data []byte) (*hostsFile, error) {
	hf := &hostsFile{}
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		fail := func(format string, a ...any) error {
			return configErrorf("%s:%d: %s", name, n, fmt.Sprintf(format, a...))
		}
		if c := strings.Index(line, "#"); c >= 0 {
			line = line[:c]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		e := hostEntry{Address: fields[0], Line: n}
		if h, s, ok := strings.Cut(e.Address, ":"); ok && !strings.Contains(s, ":") && !strings.HasPrefix(e.Address, "[") {
			slots, err := strconv.Atoi(s)
			if err != nil || slots < 1 {
				return nil, fail("%s: bad slot count %s (host:N is N slots in a hostfile; the port comes from the ssh config)", shown(e.Address), quoted(s))
			}
			e.Address, e.Slots = h, slots
		}
		maxSlots := 0
		for _, kv := range fields[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fail("%q: expected key=value (slots=N)", kv)
			}
			num, err := strconv.Atoi(v)
			switch k {
			case "slots", "max_slots", "max-slots", "count":
				if err != nil || num < 1 {
					return nil, fail("bad %s=%s (want a whole number, 1 or more)", k, v)
				}
			default:
				return nil, fail("unknown key %q (a hostfile line is `host slots=N [max_slots=M]`)", k)
			}
			switch {
			case k == "slots" || k == "count": // count: OpenMPI's older name
				if e.Slots != 0 {
					return nil, fail("slots given twice")
				}
				e.Slots = num
			default:
				maxSlots = num
			}
		}
		if maxSlots != 0 && maxSlots < e.Slots {
			return nil, fail("max_slots=%d is below slots=%d", maxSlots, e.Slots)
		}
		var err error
		if hf.Hosts, err = appendExpanded(hf.Hosts, e, name); err != nil {
			return nil, err
		}
	}
	if len(hf.Hosts) == 0 {
		return nil, configErrorf("%s: no hosts (a hostfile lists `host slots=N`, one a line)", name)
	}
	return hf, nil
}
