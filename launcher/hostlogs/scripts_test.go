package hostlogs

import (
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, own)
}

// What is sent means what the file says: comments dropped.
func TestScriptsSentAsWritten(t *testing.T) {
	shscripttest.SameMeaning(t, "logs.sh", logsSh)
}

// The script writes what the Go side reads: the stream's markers.
func TestScriptsFormats(t *testing.T) {
	for _, want := range []string{"'" + supervisor.StreamMarker + "'", "'" + logsMarker + "'", `"` + logMarker + `"`, "'" + noneMarker} {
		if !strings.Contains(logsSh.Text(), want) {
			t.Errorf("%.40q… does not hold %q", logsSh.Text(), want)
		}
	}
}
