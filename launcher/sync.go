package launcher

import (
	"time"
)

// CodeReport is what --sync did before the tasks started, in the summary:
// the tree, and on each host of the plan where it is and whether it was
// sent there now.
type CodeReport struct {
	Hash  string `json:"hash"`
	Bytes int64  `json:"bytes"` // the archive's size: what one transfer sends
	Files int    `json:"files"`
	// Sent counts the hosts the tree was sent to; the others had it.
	Sent  int              `json:"sent"`
	Hosts []CodeHostReport `json:"hosts"`
}

// CodeHostReport is the tree on one host.
type CodeHostReport struct {
	Host string `json:"host"`
	Dir  string `json:"dir"`
	// Sent: tfhive sent the tree there for this run (BytesSent, taking
	// Duration); false: the host had it already.
	Sent      bool          `json:"sent"`
	BytesSent int64         `json:"bytes_sent"`
	Duration  time.Duration `json:"duration_ns"`
}
