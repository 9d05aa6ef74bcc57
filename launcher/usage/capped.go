package usage

import "bytes"

// HostLimit bounds one host's answer. usage.sh keeps its own under it
// (HostBytes of lines, Owners owners), saying what it left out; an
// answer past it anyway is not believed at all (a cut answer would
// under-count without saying so).
const HostLimit = 64 << 20

// Capped keeps the first Max bytes written to it and drops the rest,
// saying so in Over.
type Capped struct {
	B    bytes.Buffer
	Max  int
	Over bool
}

func (c *Capped) Write(p []byte) (int, error) {
	room := c.Max - c.B.Len()
	if len(p) > room {
		c.Over = true
	}
	if room > 0 {
		c.B.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
