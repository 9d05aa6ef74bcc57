package tensorboard

import (
	"os"
)

func writeExec(path, text string) error { return os.WriteFile(path, []byte(text), 0o755) }
