package probe

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alessio/shellescape"
)

// probeScript is everything the probe needs from a host in one round trip
// and one nvidia-smi run (each run can take seconds on a host without
// persistence mode): the XML report, the owners of its GPU processes, and
// the listening TCP ports. coreutils timeout bounds a hung nvidia-smi on
// the host itself, so that nothing is left running there.
//
// It travels on the command line (probeCommand), not on stdin: OpenSSH
// grants a session's window only once its command runs, so a script on
// stdin costs a round trip more. It holds nothing secret. Being on one
// line keeps it intact through any login shell (csh cannot quote a
// newline), so every line below ends in a terminator or a keyword.
//
// It starts as few processes as it can (each fork and exec is CPU on a
// host that may be busy training): ps only when nvidia-smi lists
// processes, the pid list joined by the shell. The ports come from
// `ss -tn state listening`, whose netlink query walks only the listening
// sockets' table. `ss -tln` asks for closed sockets too, which makes the
// kernel walk its whole connection hash table, sized by memory, not by
// use: 3 of its 6 ms on a 24 GiB machine, more on a big GPU host. Reading
// /proc/net/tcp walks that table too and is only the fallback for hosts
// without iproute2.
func probeScript(timeout time.Duration, claimsOnly bool) string {
	secs := int((timeout + time.Second - 1) / time.Second)
	skip := 0
	if claimsOnly {
		skip = 1 // `tfhive ps` and `kill` need no nvidia-smi run
	}
	script := `t=` + strconv.Itoa(secs) + `;
if [ ` + strconv.Itoa(skip) + ` = 1 ]; then
  out=; rc=0;
elif command -v nvidia-smi >/dev/null 2>&1; then
  if command -v timeout >/dev/null 2>&1; then
    out=$(timeout -k 2 "$t" nvidia-smi -q -x </dev/null 2>&1); rc=$?;
  else
    out=$(nvidia-smi -q -x </dev/null 2>&1); rc=$?;
  fi;
else
  out=; rc=127;
fi;
echo ` + markSMI + ` "$rc";
printf '%s\n' "$out";
echo ` + markPS + `;
case $out in *'<pid>'*)
  p=;
  for x in $(printf '%s\n' "$out" | sed -n 's|.*<pid>\([0-9][0-9]*\)</pid>.*|\1|p'); do p=$p${p:+,}$x; done;
  if [ -n "$p" ]; then ps -o pid= -o user:32= -o args= -p "$p" </dev/null 2>/dev/null; fi;;
esac;
echo ` + markTCP + `;
ss -tn state listening 2>/dev/null || awk 'FNR == 1 || $4 == "0A"' /proc/net/tcp /proc/net/tcp6 2>/dev/null;
` + claimsScript + `
echo ` + markEnd + `;
`
	return oneLine(script)
}

// oneLine joins the script's lines, dropping their indentation.
func oneLine(script string) string {
	var lines []string
	for line := range strings.Lines(script) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, " ")
}

// probeCommand is the probe's remote command line. then, when set, is
// a one-line command the session goes on with once the probe's output is
// complete (see Options.Then).
func probeCommand(timeout time.Duration, claimsOnly bool, then string) string {
	script := probeScript(timeout, claimsOnly)
	if then != "" {
		script += " " + oneLine(then)
	}
	return "exec sh -c " + shellescape.Quote(script)
}

const (
	markSMI = "@@tfhive-smi"
	markPS  = "@@tfhive-ps"
	markTCP = "@@tfhive-tcp"
	markEnd = "@@tfhive-end"
)

// probeOutput is the script's output cut at its markers.
type probeOutput struct {
	smiExit int
	smi     []byte
	ps      []byte
	tcp     []byte
	claims  claimsSection
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
		return po, fmt.Errorf("unexpected probe output %q", firstLine(out))
	}
	rc, err := strconv.Atoi(fields[1])
	if err != nil {
		return po, fmt.Errorf("unexpected probe output %q", line)
	}
	po.smiExit = rc
	// nvidia-smi's output may be empty, putting the next marker first.
	rest = append([]byte("\n"), rest...)
	var sections [6][]byte
	var claimsLine []string
	for i, mark := range []string{markPS, markTCP, markClaims, markLocks, markHolders, markEnd} {
		// The claims marker carries the machine id and the claims dir.
		m := []byte("\n" + mark + "\n")
		if mark == markClaims {
			m = []byte("\n" + mark + " ")
		}
		before, after, found := bytes.Cut(rest, m)
		if !found {
			return po, fmt.Errorf("probe output ends early (no %s)", mark)
		}
		if mark == markClaims {
			var head []byte
			head, after, _ = bytes.Cut(after, []byte("\n"))
			claimsLine = strings.Fields(string(head))
		}
		sections[i] = before
		rest = append([]byte("\n"), after...)
	}
	po.smi, po.ps, po.tcp = bytes.TrimPrefix(sections[0], []byte("\n")), sections[1], sections[2]
	po.claims = claimsSection{files: sections[3], locks: sections[4], holders: sections[5]}
	if len(claimsLine) == 2 {
		po.claims.machineID, po.claims.dir = claimsLine[0], claimsLine[1]
	}
	return po, nil
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if len(line) > 120 {
		line = line[:120]
	}
	return string(line)
}
