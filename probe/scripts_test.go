package probe

import (
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, scripts)
}

// The probe travels as one line: joined, it must mean what its files say.
func TestProbeScriptOneLine(t *testing.T) {
	shscripttest.SameMeaning(t, "probe.sh + code.sh + policy.sh + claims.sh + runs.sh", probeSh)
	if strings.Contains(probeSh.Text(), "\n") {
		t.Errorf("the probe holds a newline: %q", probeSh.Text())
	}
}

// The scripts write what the Go side reads: its markers, in the order
// splitProbeOutput cuts at, and probe/claim's lock file names.
func TestProbeScriptFormats(t *testing.T) {
	text := probeSh.Text()
	at := 0
	for _, mark := range []string{markSMI, markPS, markTCP, markNIC, markCode, markPolicy, markClaims, markLocks, markHolders, markRuns, markEnd} {
		i := strings.Index(text[at:], "echo "+mark+" ")
		if i < 0 {
			i = strings.Index(text[at:], "echo "+mark+";")
		}
		if i < 0 {
			t.Fatalf("no `echo %s` after byte %d of the probe", mark, at)
		}
		at += i + 1
	}
	for _, want := range []string{"${TFHIVE_CLAIMS_DIR:-" + claim.DirDefault + "}", `'.*/` + strings.ReplaceAll(claim.FilePrefix, ".", "[.]") + "(gpu|port)-[A-Za-z0-9-]{1,80}" + strings.ReplaceAll(claim.FileSuffix, ".", "[.]") + "'"} {
		if !strings.Contains(text, want) {
			t.Errorf("the claims script does not hold %q", want)
		}
	}
}
