package shscript

import (
	"os/exec"
	"strings"
	"testing"
	"testing/fstest"
)

var files = fstest.MapFS{
	"lines.sh": {Data: []byte("# shellcheck shell=sh\n# what it does\n\nprintf '<%s>' \"$a\" \"$b\"\n  # indented comment\nprintf '<%s>\\n' \"$c\"\n")},
	"one.sh":   {Data: []byte("# shellcheck shell=sh\nif true; then\n  printf '<%s>' \"$a\";\nfi;\nsh -c 'printf \"<%s>\\n\" \"$c\"';\n")},
}

func TestLoadDropsComments(t *testing.T) {
	if got, want := Load(files, "lines.sh").Text(), "printf '<%s>' \"$a\" \"$b\"\nprintf '<%s>\\n' \"$c\"\n"; got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
	if got, want := LoadOneLine(files, "one.sh").Text(), `if true; then printf '<%s>' "$a"; fi; sh -c 'printf "<%s>\n" "$c"';`; got != want {
		t.Errorf("one line: %q, want %q", got, want)
	}
	if got := Load(files, "lines.sh", "one.sh").Source(); got != string(files["lines.sh"].Data)+string(files["one.sh"].Data) {
		t.Errorf("Source() of two files: %q", got)
	}
}

// Every value arrives as it was, whatever it holds; exported ones reach
// the script's children.
func TestWithQuotesEveryValue(t *testing.T) {
	odd := "it's $HOME `id` \"q\" \\ ; * \n next"
	script := Load(files, "lines.sh").With(Set("a", odd), Set("b", ""), Export("c", "exported"))
	out, err := exec.Command("sh", "-c", script).Output()
	if want := "<" + odd + "><><exported>\n"; err != nil || string(out) != want {
		t.Errorf("got %q (%v), want %q", out, err, want)
	}
	one := LoadOneLine(files, "one.sh").With(Set("a", "x y"), Export("c", "z"))
	if strings.Contains(one, "\n") || !strings.HasPrefix(one, "a='x y'; export c=z; if") {
		t.Errorf("one-line script: %q", one)
	}
	out, err = exec.Command("sh", "-c", one).Output()
	if err != nil || string(out) != "<x y><z>\n" {
		t.Errorf("one-line script ran: %q (%v)", out, err)
	}
}

func TestWithRefusesBadParameters(t *testing.T) {
	for _, tt := range []struct {
		s Script
		v Var
	}{
		{Load(files, "lines.sh"), Set("a b", "x")},
		{Load(files, "lines.sh"), Export("1a", "x")},
		{LoadOneLine(files, "one.sh"), Set("a", "two\nlines")},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("With(%+v) did not panic", tt.v)
				}
			}()
			tt.s.With(tt.v)
		}()
	}
}
