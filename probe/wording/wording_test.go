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

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "",
		"plain: gpu01 (ü, 日本)":                "plain: gpu01 (ü, 日本)",
		"h1\nh2":                              `h1\nh2`,
		"a\tb\r\n":                            `a\tb\r\n`,
		"\x1b[31mred\x07":                     `\x1b[31mred\a`,
		"x\x7fy":                              `x\x7fy`,
		"c1 \u009b2J":                         `c1 \u009b2J`,
		"bidi \u202eevil\u202c \u2066x\u2069": `bidi \u202eevil\u202c \u2066x\u2069`,
		"bad \xff byte":                       `bad \xff byte`,
		`quotes "kept" \ too`:                 `quotes "kept" \ too`,
	} {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
