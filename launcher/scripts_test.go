package launcher

import (
	"testing"

	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, ownScripts)
}

// What is sent means what the files say: comments dropped, and the
// command line's scripts joined into one line.
func TestScriptsSentAsWritten(t *testing.T) {
	for name, s := range map[string]shscript.Script{"find-run.sh": findRunSh, "set-aside.sh": setAsideSh, "end-notice.sh": endNoticeSh} {
		shscripttest.SameMeaning(t, name, s)
	}
}
