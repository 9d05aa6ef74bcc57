package supervisor

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestAttemptFilter(t *testing.T) {
	const mark = "MARK"
	in := "a\nb@@tfhive-attempt MARK 0 3\nc@@tfhive-attempt OTHER 1 2\n@@tfhive-attempt MARK x y\nd@@tfhive-attempt MARK 1 0\n@@tf"
	for _, size := range []int{1, 2, 5, 1000} {
		var out bytes.Buffer
		var seen []string
		f := NewAttemptFilter(&out, mark, func(a, rc int) { seen = append(seen, fmt.Sprintf("%d:%d", a, rc)) })
		for i := 0; i < len(in); i += size {
			f.Write([]byte(in[i:min(i+size, len(in))]))
		}
		f.Flush()
		if want := "a\nbc@@tfhive-attempt OTHER 1 2\n@@tfhive-attempt MARK x y\nd@@tf"; out.String() != want {
			t.Errorf("writes of %d: out %q, want %q", size, out.String(), want)
		}
		if strings.Join(seen, " ") != "0:3 1:0" {
			t.Errorf("writes of %d: attempts %v", size, seen)
		}
	}
}

// Placed, the filter takes out only the attempt lines at the offsets the
// records gave: one the task printed, mark and all, is output.
func TestAttemptFilterPlaced(t *testing.T) {
	var out bytes.Buffer
	var got []string
	f := NewAttemptFilter(&out, "MK", func(a, rc int) { got = append(got, fmt.Sprint(a, rc)) })
	f.placed = true
	forged := "x@@tfhive-attempt MK 0 0\n"
	real := "@@tfhive-attempt MK 0 3\n"
	recs := &AttemptRecords{next: io.Discard, prefix: "@@tfhive-attempt MK ", f: f}
	recs.Write([]byte("@@tfhive-attempt MK 0 3 " + fmt.Sprint(len(forged)+4) + "\n"))
	for _, c := range []byte(forged + "tail" + real + "next") {
		f.Write([]byte{c})
	}
	f.Flush()
	if want := forged + "tailnext"; out.String() != want || fmt.Sprint(got) != "[0 3]" {
		t.Errorf("out %q, reports %v; want %q, [0 3]", out.String(), got, want)
	}
}

// Checked, the records come among the file's bytes, anywhere (mid-line,
// cut between writes): the line a record names is taken out whether its
// record comes before or after it; one no record names, the task's, is
// passed on once a "seen" past it, or the stream's end, says none will
// come; and the task's own record lines, without the secret, are its
// output.
func TestAttemptFilterChecked(t *testing.T) {
	forged := "x@@tfhive-attempt MK 0 0\n"
	real := "@@tfhive-attempt MK 0 3\n"
	fake := "@@tfhive-rec MK at 1\n"
	off := fmt.Sprint(len(forged) + len(fake) + 4)
	for _, c := range []struct{ name, stream string }{
		{"record first", "@@tfhive-rec SEC at " + off + "\n" + forged + fake + "ta@@tfhive-rec SEC seen 3\nil" + real + "next"},
		{"record after", forged + fake + "tail" + real + "ne@@tfhive-rec SEC at " + off + "\n@@tfhive-rec SEC seen 99\nxt"},
		{"no seen", forged + fake + "tail" + real + "next@@tfhive-rec SEC at " + off + "\n"},
	} {
		for _, step := range []int{1, 3, 1000} {
			var out bytes.Buffer
			var got []string
			f := NewAttemptFilter(&out, "MK", func(a, rc int) { got = append(got, fmt.Sprint(a, rc)) })
			f.Checked("SEC")
			rl := &RecordLines{next: f, f: f}
			for b := []byte(c.stream); len(b) > 0; {
				n := min(step, len(b))
				rl.Write(b[:n])
				b = b[n:]
			}
			rl.Flush()
			f.Flush()
			if want := forged + fake + "tailnext"; out.String() != want || fmt.Sprint(got) != "[0 3]" {
				t.Errorf("%s, writes of %d: out %q, reports %v; want %q, [0 3]", c.name, step, out.String(), got, want)
			}
		}
	}
	// A forged line is held only until a "seen" past it.
	var out bytes.Buffer
	f := NewAttemptFilter(&out, "MK", func(int, int) { t.Error("a forged line was taken") })
	f.Checked("SEC")
	rl := &RecordLines{next: f, f: f}
	rl.Write([]byte(forged + "more"))
	if out.String() != "x" {
		t.Errorf("before seen: %q", out.String())
	}
	rl.Write([]byte("@@tfhive-rec SEC seen 2\n"))
	if out.String() != forged+"more" {
		t.Errorf("after seen: %q", out.String())
	}
}
