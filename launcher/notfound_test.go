package launcher

import "testing"

// The not-found hint: for task.sh's line as the last on stderr of a task
// that exited 127; a bare command adds that setup: can set PATH; with
// --sync it asks whether the tree has it.
func TestNotFoundHint(t *testing.T) {
	const sync = "tfhive: hint: --sync DIR sends your code; workdir: in the hosts file (or --workdir) sets where tasks start"
	for _, tt := range []struct {
		code   int
		last   []string
		synced bool
		want   string
	}{
		{127, []string{"tfhive: python3: script train.py not found in /home/ann"}, false, sync},
		{127, []string{"tfhive: nosuch: command not found in /home/ann"}, false,
			"tfhive: hint: setup: in the hosts file can set PATH or activate a venv; --sync DIR sends your code; workdir: in the hosts file (or --workdir) sets where tasks start"},
		{127, []string{"tfhive: ./run.sh: command not found in /home/ann"}, false, sync},
		{127, []string{"tfhive: bash: script x.sh not found in /c"}, true, "tfhive: hint: is it in the tree --sync sent? git-ignored files are not sent"},
		{127, []string{"tfhive: bash: script x.sh not found in /c", "then more"}, false, ""},
		{1, []string{"tfhive: bash: script x.sh not found in /c"}, false, ""},
		{127, []string{"bash: foo: command not found"}, false, ""},
		{127, nil, false, ""},
	} {
		if got := notFoundHint(tt.code, tt.last, tt.synced); got != tt.want {
			t.Errorf("%d %q %v: %q, want %q", tt.code, tt.last, tt.synced, got, tt.want)
		}
	}
}
