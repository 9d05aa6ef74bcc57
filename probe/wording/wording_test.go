package wording

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 tasks"}, {1, "1 task"}, {2, "2 tasks"}, {-1, "-1 tasks"}, {1000, "1000 tasks"}} {
		if got := Count(c.n, "task"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestFirstLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		"one":               "one",
		"one\ntwo\n":        "one",
		"\nafter a newline": "",
		"crlf\r\nkept":      "crlf\r",
	} {
		if got := FirstLine(in); got != want {
			t.Errorf("FirstLine(%q) = %q, want %q", in, got, want)
		}
	}
}
