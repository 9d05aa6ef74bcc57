package emit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Write checks o, renders the job for o.Target, checks what it rendered
// and writes it to w. Errors that o could fix are schedule.UsageErrors,
// which main maps to exit 2.
func Write(w io.Writer, o Options) error {
	if err := o.check(); err != nil {
		return err
	}
	var text string
	var err error
	if o.Target == Slurm {
		if text, err = slurmScript(&o); err == nil {
			err = checkScript(text)
		}
	} else {
		if text, err = kubeManifest(&o); err == nil {
			err = checkManifest(text)
		}
	}
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, text)
	return err
}

// checkScript has bash parse the script without running it (bash -n),
// where bash is installed: a --setup snippet that does not parse is the
// user's to fix, anything else is tfhive's bug.
func checkScript(script string) error {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil
	}
	cmd := exec.Command(bash, "-n")
	cmd.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return fmt.Errorf("checking the script with bash -n: %w", err)
		}
		return usage("check --setup: bash must be able to parse it",
			"the script does not parse (bash -n): %s", strings.TrimSpace(stderr.String()))
	}
	return nil
}
