package tensorboard

import (
	"testing"

	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

// tensorboard.sh is sent to hosts: it passes shellcheck, and what is sent
// means what the file says (comments dropped).
func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, scripts)
}

func TestScriptsSentAsWritten(t *testing.T) {
	shscripttest.SameMeaning(t, "tensorboard.sh", tensorboardSh)
}
