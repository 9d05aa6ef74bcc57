package hostops

import (
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, own)
}

// What is sent means what the files say: comments dropped.
func TestScriptsSentAsWritten(t *testing.T) {
	for name, s := range map[string]shscript.Script{"kill.sh": killSh, "gc-runs.sh": gcRunsSh, "ticket.sh": ticketSh, "reserve.sh": reserveSh} {
		shscripttest.SameMeaning(t, name, s)
	}
}

// kill.sh finds the holders by the label of probe/claim.
func TestScriptsFormats(t *testing.T) {
	if want := `$k == "` + claim.HolderMarker + `"`; !strings.Contains(killSh.Text(), want) {
		t.Errorf("%.40q… does not hold %q", killSh.Text(), want)
	}
}
