package probe

import (
	"bytes"
	"embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alessio/shellescape"

	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/wording"
)

// The probe fetches everything tfhive needs from a host in one round trip
// and one nvidia-smi run (each run can take seconds on a host without persistence
// mode; a host with a GPU in MIG mode has one more, `nvidia-smi -L`, in the
// same round trip, for its MIG instances' UUIDs: mig.go): the XML report, the owners of its GPU processes, the listening
// TCP ports, the interfaces' addresses (scripts/probe.sh), the claims
// (scripts/claims.sh) and, for `tfhive ps`, what the user's kept runs'
// directories say of the runs holding them (scripts/runs.sh).
//
// It travels on the command line (probeCommand), not on stdin: OpenSSH
// grants a session's window only once its command runs, so a script on
// stdin costs a round trip more. It holds nothing secret. Being on one
// line keeps it intact through any login shell (csh cannot quote a
// newline).
//
//go:embed scripts/*.sh
var scripts embed.FS

var probeSh = shscript.LoadOneLine(scripts, "scripts/probe.sh", "scripts/code.sh", "scripts/policy.sh", "scripts/claims.sh", "scripts/runs.sh")

// probeScript is the probe with its parameters: nvidia-smi's time limit
// on the host, in whole seconds, whether to skip nvidia-smi and ip, the
// content hash of the --sync tree to look for ("": none), and the
// keepalive window within which a kept run's keeper was last heard from
// (0: kept runs are not looked at), and with runs whether to query the
// claimed GPUs' live utilisation too (Options.NoLiveUse).
func probeScript(timeout time.Duration, claimsOnly bool, code string, runs time.Duration, liveUse bool) string {
	secs := int((timeout + time.Second - 1) / time.Second)
	skip := "0"
	if claimsOnly {
		skip = "1" // `tfhive ps` and `kill` need neither
	}
	window := 0
	if runs > 0 {
		window = max(int((runs+time.Second-1)/time.Second), 1)
	}
	use := "0"
	if liveUse {
		use = "1"
	}
	return probeSh.With(shscript.Set("t", strconv.Itoa(secs)), shscript.Set("claims_only", skip), shscript.Set("code", code),
		shscript.Set("runs", strconv.Itoa(window)), shscript.Set("use", use), shscript.Set("cmax", strconv.Itoa(MaxLockFiles)), shscript.Set("rmax", strconv.Itoa(MaxBookingFiles)), shscript.Set("pbytes", strconv.Itoa(MaxPolicySize)))
}

// probeCommand is the probe's remote command line. then, when set, is
// a one-line command the session goes on with once the probe's output is
// complete (see Options.Then).
func probeCommand(timeout time.Duration, claimsOnly bool, code string, runs time.Duration, liveUse bool, then string) string {
	script := probeScript(timeout, claimsOnly, code, runs, liveUse)
	if then != "" {
		script += " " + shscript.OneLine(then)
	}
	return "exec sh -c " + shellescape.Quote(script)
}

// The markers the scripts print before their sections.
const (
	markSMI = "@@tfhive-smi"
	markPS  = "@@tfhive-ps"
	markTCP = "@@tfhive-tcp"
	markNIC = "@@tfhive-nic"
	markEnd = "@@tfhive-end"
)

// probeOutput is the script's output cut at its markers.
type probeOutput struct {
	smiExit int
	smi     []byte
	ps      []byte
	tcp     []byte
	nic     []byte
	code    []byte
	policy  []byte
	claims  claimsSection
	runs    []byte
}

func splitProbeOutput(out []byte) (probeOutput, error) {
	var po probeOutput
	// Login shells whose rc files print something (a banner, a fortune)
	// put it before our first marker: skip it.
	if i := bytes.Index(out, []byte(markSMI+" ")); i > 0 && out[i-1] == '\n' {
		out = out[i:]
	}
	line, rest, ok := bytes.Cut(out, []byte("\n"))
	fields := strings.Fields(string(line))
	if !ok || len(fields) != 2 || fields[0] != markSMI {
		return po, fmt.Errorf("unexpected probe output %q", excerpt(out))
	}
	rc, err := strconv.Atoi(fields[1])
	if err != nil {
		return po, fmt.Errorf("unexpected probe output %q", line)
	}
	po.smiExit = rc
	// nvidia-smi's output may be empty, putting the next marker first.
	// rest always begins with the newline that ended the line before, so
	// that every marker is found at the start of a line; it is a window
	// on out, not a copy (a copy per section was the probe's largest
	// allocation at hundreds of hosts), and each section is capped at its
	// end so that an append to it cannot write over the next.
	rest = out[len(line):]
	var sections [7][]byte
	var claimsLine []string
	for i, mark := range []string{markPS, markTCP, markNIC, markClaims, markLocks, markHolders, markEnd} {
		// The claims marker carries the machine id, the process table's
		// word and the claims dir.
		m := []byte("\n" + mark + "\n")
		if mark == markClaims {
			m = []byte("\n" + mark + " ")
		}
		at := bytes.Index(rest, m)
		if at < 0 {
			return po, fmt.Errorf("probe output ends early (no %s)", mark)
		}
		sections[i] = rest[:at:at]
		next := at + len(m) - 1 // the marker's closing newline
		if mark == markClaims {
			next++
			head := rest[next:]
			if nl := bytes.IndexByte(head, '\n'); nl >= 0 {
				head = head[:nl]
				next += nl
			} else {
				next = -1
			}
			claimsLine = strings.Fields(string(head))
		}
		if next < 0 {
			rest = []byte("\n")
			continue
		}
		rest = rest[next:]
	}
	po.smi, po.ps, po.tcp = bytes.TrimPrefix(sections[0], []byte("\n")), sections[1], sections[2]
	po.nic, po.code = cutCode(sections[3])
	po.code, po.policy = cutPolicy(po.code)
	holders, runs := cutRuns(sections[6])
	files, overflow := cutOverflow(sections[4])
	po.claims = claimsSection{files: files, overflow: overflow, locks: sections[5], holders: holders}
	po.runs = runs
	if len(claimsLine) == 3 {
		po.claims.machineID, po.claims.processTable, po.claims.dir = claimsLine[0], claimsLine[1], claimsLine[2]
	}
	return po, nil
}

// cutOverflow takes the line "X" off the end of the lock files' list:
// claims.sh's word that the list was cut at MaxLockFiles.
func cutOverflow(files []byte) ([]byte, bool) {
	if rest, ok := bytes.CutSuffix(files, []byte("\nX")); ok {
		return rest, true
	}
	return files, bytes.Equal(files, []byte("X"))
}

// excerpt is what an error message quotes of output the probe did not
// expect: its first line, cut at 120 bytes so that a flood stays one line.
func excerpt(b []byte) string {
	return wording.FirstLine(string(b[:min(len(b), 120)]))
}
