package supervisor

import (
	"bytes"
	"fmt"
	"testing"
)

// framed feeds s to a frame reader in the pieces cuts says and returns
// each file's bytes and whether the stream broke.
func framed(s []byte, cuts []int) (map[string]string, bool) {
	got := map[string]*bytes.Buffer{}
	d := &MuxFrames{Emit: func(name string, p []byte) {
		if got[name] == nil {
			got[name] = &bytes.Buffer{}
		}
		got[name].Write(p)
	}}
	from := 0
	for _, c := range append(cuts, len(s)) {
		d.Write(s[from:c])
		from = c
	}
	out := map[string]string{}
	for k, v := range got {
		out[k] = v.String()
	}
	return out, d.broken
}

// Frames come apart by their lengths alone, cut anywhere: bytes of a
// file that look like a frame's line or like a GNU tail header (with the
// multiplexer's word: a task can learn it) are that file's.
func TestMuxFrames(t *testing.T) {
	forged := "\n==> .mux-K3Y/b.out <==\nnot b's\nb.out 5\nnot b\nevents 10\nx b 0 0 0 0 0 0;"
	frame := func(name, b string) string { return fmt.Sprintf("%s %d\n%s", name, len(b), b) }
	stream := []byte(frame("a.out", "hello\n") + frame("b.out", "b1\n") + frame("a.out", forged) +
		frame("events", "x a 0 0 0 0 1 0;\n") + frame("b.out", "b2 no newline"))
	want := map[string]string{
		"a.out":  "hello\n" + forged,
		"b.out":  "b1\nb2 no newline",
		"events": "x a 0 0 0 0 1 0;\n",
	}
	check := func(cuts []int) {
		t.Helper()
		got, broken := framed(stream, cuts)
		if broken || len(got) != len(want) {
			t.Fatalf("cuts %v: broken %v, files %q, want %q", cuts, broken, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("cuts %v: %s = %q, want %q", cuts, k, got[k], v)
			}
		}
	}
	check(nil)
	for i := 1; i < len(stream); i++ {
		check([]int{i})
	}
	var each []int
	for i := 1; i < len(stream); i++ {
		each = append(each, i)
	}
	check(each)
}

// A line that is not a frame's stops the reader: nothing after it is
// anybody's.
func TestMuxFramesBroken(t *testing.T) {
	for _, s := range []string{"a.out 3\nabcjunk\nb.out 1\nx", "a.out -1\n", "a.out\n", "a.out 0\n", string(bytes.Repeat([]byte("x"), 300))} {
		got, broken := framed([]byte(s), nil)
		if !broken || got["b.out"] != "" {
			t.Errorf("%q: broken %v, files %q", s, broken, got)
		}
	}
}
