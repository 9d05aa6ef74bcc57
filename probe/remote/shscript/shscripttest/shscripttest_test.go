package shscripttest

import (
	"fmt"
	"testing"

	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// Canonical tells a join that keeps a script's meaning from one that
// does not.
func TestCanonicalCatchesBadJoins(t *testing.T) {
	need(t, "bash")
	for _, tt := range []struct {
		src  string
		same bool
	}{
		{"if a; then\n  b;\nelse\n  c;\nfi;\ncase $x in y)\n  z;;\nesac;\nfor i in 1; do echo \"$i\" |\n  cat;\ndone;\n# a comment\n", true},
		{"a=1\nb\n", false},              // an assignment becomes b's environment
		{"echo x # c\necho y;\n", false}, // the comment eats what follows
		{"x='a\n  b';\n", false},         // a newline inside quotes
		{"f() {\n  g;\n}\nh;\n", false},  // no terminator after }: a syntax error joined
	} {
		want, err := Canonical(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Canonical(shscript.OneLine(tt.src))
		if same := err == nil && got == want; same != tt.same {
			t.Errorf("%q joined: same meaning %v, want %v (%v)\n%s\n%s", tt.src, same, tt.same, err, want, got)
		}
	}
}

func TestLateQuiet(t *testing.T) {
	script := `read -r a <"/proc/$p/stat" 2>/dev/null || return
read -r a 2>/dev/null <"/proc/$p/stat"
x=$(tr '\0' ' ' </proc/1/cmdline 2>/dev/null)
cat <<<"$x" 2>/dev/null
nvidia-smi </dev/null 2>/dev/null
exec 4<&0 2>/dev/null
while read -r l; do :; done <"$f" 2>/dev/null`
	got := fmt.Sprint(LateQuiet(script))
	if got != "[1 3 7]" {
		t.Errorf("LateQuiet = %s, want [1 3 7]", got)
	}
}
