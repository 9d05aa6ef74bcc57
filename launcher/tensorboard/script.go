package tensorboard

import (
	"crypto/rand"
	"embed"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/wording"
)

//go:embed scripts/tensorboard.sh
var scripts embed.FS

var tensorboardSh = shscript.Load(scripts, "scripts/tensorboard.sh")

// Command is what the host's session runs: bash (as the supervisor's; a
// setup snippet may `source`), which reads the script
// from stdin behind its length, as a task's stage travels, so that the
// setup snippet and the dirs are never on a command line; stdin is then
// left to the script (its end stops TensorBoard).
const Command = `exec bash --norc -c 'IFS= read -r n && s=$(head -c "$n") && eval "$s"'`

// Dir is one TensorBoard run: a name (the run id) and its directory.
type Dir struct{ Name, Path string }

// Input is what Command is sent: the script with its parameters, behind
// its length. env is the hosts file's environment for the host; secret
// (NewSecret) the path TensorBoard serves under.
func Input(dirs []Dir, workdir, setup string, env map[string]string, secret string) string {
	if strings.TrimSpace(setup) == "" {
		setup = ""
	}
	var vars []shscript.Var
	for _, k := range slices.Sorted(maps.Keys(env)) {
		vars = append(vars, shscript.Export(k, env[k]))
	}
	vars = append(vars,
		shscript.Set("tfhive_workdir", workdir),
		shscript.Set("tfhive_setup", setup),
		shscript.Set("tfhive_setup_line", wording.FirstLine(strings.TrimSpace(setup))),
		shscript.Set("tfhive_spec", Spec(dirs)),
		shscript.Set("tfhive_secret", secret),
	)
	s := tensorboardSh.With(vars...)
	return strconv.Itoa(len(s)) + "\n" + s
}

// NewSecret is the path prefix a TensorBoard serves under: 127.0.0.1 is
// every local user's, and TensorBoard has no login of its own, so its
// pages are only for whoever knows the prefix (128 random bits, hex).
func NewSecret() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand's contract)
	return hex.EncodeToString(b)
}

// Flags are TensorBoard's arguments for serving dirs on 127.0.0.1:port
// under /secret, the secret read from flagfile (FlagFile) so that it is
// not on the command line every local user can read.
func Flags(dirs []Dir, port int, flagfile string) []string {
	return []string{"--flagfile", flagfile, "--logdir_spec", Spec(dirs), "--host", "127.0.0.1", "--port", strconv.Itoa(port)}
}

// FlagFile writes --path_prefix=/secret in a new file only the user can
// read (0600, in a fresh 0700 dir); remove removes both.
func FlagFile(secret string) (path string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "tfhive-tensorboard-") // 0700
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "flags")
	if err := os.WriteFile(path, []byte("--path_prefix=/"+secret+"\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// Spec is TensorBoard's --logdir_spec of dirs: NAME:DIR, comma-separated
// (a run id holds neither a colon nor a comma).
func Spec(dirs []Dir) string {
	parts := make([]string, len(dirs))
	for i, d := range dirs {
		parts[i] = d.Name + ":" + d.Path
	}
	return strings.Join(parts, ",")
}

// CheckDir refuses a directory TensorBoard's --logdir_spec cannot hold:
// a comma separates its entries.
func CheckDir(d string) error {
	if strings.Contains(d, ",") {
		return fmt.Errorf("model dir %q holds a comma, which TensorBoard's --logdir_spec cannot take", d)
	}
	return nil
}

// Word is what the script said in a line: TensorBoard's port and pid on
// the host once started, or why not, or its exit status; ok is false for
// a line that is not the script's.
type Word struct {
	Port, PID int
	Err       string
	Exited    bool
	Exit      int
}

const mark = "@@tfhive-tensorboard "

// ParseWord reads one of the script's lines.
func ParseWord(line string) (Word, bool) {
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), mark)
	if !ok {
		return Word{}, false
	}
	if why, ok := strings.CutPrefix(rest, "error "); ok {
		return Word{Err: why}, true
	}
	if code, ok := strings.CutPrefix(rest, "exit "); ok {
		n, err := strconv.Atoi(code)
		return Word{Exited: true, Exit: n}, err == nil
	}
	var w Word
	if _, err := fmt.Sscanf(rest, "port=%d pid=%d", &w.Port, &w.PID); err != nil || w.Port <= 0 || w.Port > 65535 {
		return Word{}, false
	}
	return w, true
}
