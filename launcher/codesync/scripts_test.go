package codesync

import (
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, scripts)
}

// Both scripts travel on the command line as one line: joined, they mean
// what the files say.
func TestScriptsSentAsWritten(t *testing.T) {
	for name, s := range map[string]shscript.Script{"cache.sh + sync.sh": syncSh, "cache.sh + gc.sh": gcSh} {
		shscripttest.SameMeaning(t, name, s)
		if strings.Contains(s.Text(), "\n") {
			t.Errorf("%s holds a newline: %.80q", name, s.Text())
		}
	}
}

// The scripts write what the Go side reads.
func TestScriptsFormats(t *testing.T) {
	for _, want := range []string{"'" + syncSent + "'", "'" + syncPresent + "'", `"$t/` + doneMember + `"`, `"$t/` + strings.TrimSuffix(treeDir, "/") + `"`} {
		if !strings.Contains(syncSh.Text(), want) {
			t.Errorf("sync.sh does not hold %s", want)
		}
	}
	for _, want := range []string{`"@@tfhive-gc $c"`, "echo @@tfhive-du", `"$k $n"`, "TFHIVE_CODE_DIR="} {
		if !strings.Contains(gcSh.Text(), want) {
			t.Errorf("gc.sh does not hold %s", want)
		}
	}
}
