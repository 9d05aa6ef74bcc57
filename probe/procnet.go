package probe

import (
	"slices"
	"strconv"
	"strings"
)

// tcpListen is the kernel's TCP_LISTEN state as /proc/net/tcp prints it.
const tcpListen = "0A"

// parseListeningPorts returns the TCP ports something listens on, on any
// address, from `ss -tn state listening` (which leaves out the State
// column), `ss -tln` or, where ss is missing, from /proc/net/tcp and
// /proc/net/tcp6 concatenated. A task must not be given any of them,
// whichever address it would bind. The result is sorted, unique and
// non-nil.
func parseListeningPorts(out []byte) []int {
	ports := []int{}
	var buf [5]string
	for line := range strings.Lines(string(out)) {
		f := leadingFields(line, buf[:0])
		var addr string
		base := 16
		switch {
		case len(f) >= 5 && f[0] == "LISTEN":
			// ss: State Recv-Q Send-Q Local:Port Peer:Port
			addr, base = f[3], 10
		case len(f) >= 4 && isUint(f[0]) && isUint(f[1]) && strings.Contains(f[2], ":"):
			// ss filtered to one state: Recv-Q Send-Q Local:Port Peer:Port
			addr, base = f[2], 10
		case len(f) >= 4 && strings.HasSuffix(f[0], ":") && f[3] == tcpListen:
			// /proc/net/tcp: sl local_address rem_address st ...
			addr = f[1]
		default:
			continue // headers, other states
		}
		i := strings.LastIndexByte(addr, ':')
		if i < 0 {
			continue
		}
		port, err := strconv.ParseUint(addr[i+1:], base, 16)
		if err != nil || port == 0 {
			continue
		}
		ports = append(ports, int(port))
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// leadingFields appends line's first cap(dst) space-separated fields to
// dst: no allocation per line (/proc/net/tcp has a line per socket, and
// strings.Fields' slices were a tenth of a probe's allocations).
func leadingFields(line string, dst []string) []string {
	for len(dst) < cap(dst) {
		line = strings.TrimLeft(line, " \t\r\n\v\f")
		if line == "" {
			break
		}
		end := strings.IndexAny(line, " \t\r\n\v\f")
		if end < 0 {
			end = len(line)
		}
		dst = append(dst, line[:end])
		line = line[end:]
	}
	return dst
}

func isUint(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}
