package doctor

import (
	"testing"

	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, scripts)
}

// What is sent means what the file says: comments dropped.
func TestScriptsSentAsWritten(t *testing.T) {
	shscripttest.SameMeaning(t, "doctor.sh", doctorSh)
}
