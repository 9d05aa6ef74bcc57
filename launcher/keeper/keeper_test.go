package keeper

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/notify"
)

// The test binary is its own keeper: Spawn starts it again, with the
// keeper's environment; it says what it was given and goes.
func TestMain(m *testing.M) {
	if Mode() {
		cmdline, err := os.ReadFile("/proc/self/cmdline")
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(3)
		}
		data, _ := json.Marshal(map[string][]string{
			"cmdline": strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")[1:],
			"notify":  Notify(nil), "args": Args()})
		if err := os.WriteFile(filepath.Join(LogDir(), "seen.json"), data, 0o600); err != nil {
			os.Exit(4)
		}
		Started()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A detached run's command line is any local user's to read
// (/proc/PID/cmdline) for as long as it runs: the keeper's holds no
// --notify target, in any spelling; they come on its pipe, with the
// command line whole for repro.json.
func TestSpawnHandsNotifyOverOffTheCommandLine(t *testing.T) {
	args := []string{"run", "--notify", "https://hooks.example/T/B/s3cret-1", "-notify", "SLACK_TOKEN=s3cret-2 true",
		"--notify=https://hooks.example/s3cret-3", "-notify=mail-me --token s3cret-4", "--workers", "8",
		"--", "train", "--notify", "keep-me"}
	notify := []string{"https://hooks.example/T/B/s3cret-1", "SLACK_TOKEN=s3cret-2 true",
		"https://hooks.example/s3cret-3", "mail-me --token s3cret-4"}
	saved := os.Args
	os.Args = append([]string{saved[0]}, args...)
	defer func() { os.Args = saved }()
	dir := t.TempDir()
	var stderr bytes.Buffer
	code, err := Spawn(dir, "r1", os.O_EXCL, notify, &stderr)
	if err != nil || code != -1 {
		t.Fatalf("Spawn: %d, %v; the keeper said %q", code, err, stderr.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "seen.json"))
	if err != nil {
		t.Fatal(err)
	}
	var seen map[string][]string
	if err := json.Unmarshal(data, &seen); err != nil {
		t.Fatal(err)
	}
	if want := []string{"run", "--workers", "8", "--", "train", "--notify", "keep-me"}; !slices.Equal(seen["cmdline"], want) {
		t.Errorf("the keeper's command line: %q, want %q", seen["cmdline"], want)
	}
	if !slices.Equal(seen["notify"], notify) {
		t.Errorf("the keeper's --notify: %q, want %q", seen["notify"], notify)
	}
	if !slices.Equal(seen["args"], args) {
		t.Errorf("the keeper's Args: %q, want the first tfhive's %q", seen["args"], args)
	}
}

// What the first tfhive sets in its keeper's environment is tfhive's own:
// a --notify command the keeper runs never sees it (notify.Internal).
func TestKeeperEnvIsInternal(t *testing.T) {
	for _, name := range []string{Env, RunEnv, LogDirEnv, HandEnv} {
		if !notify.Internal(name) {
			t.Errorf("%s: a --notify command would see it", name)
		}
	}
}
