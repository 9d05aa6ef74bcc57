package launcher

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// demuxed feeds s to a demuxer in the pieces cuts says and returns each
// file's bytes and how many it holds.
func demuxed(prefix string, s []byte, cuts []int) (map[string]string, int) {
	got := map[string]*bytes.Buffer{}
	d := newTailDemux(prefix, func(name string, p []byte) {
		if got[name] == nil {
			got[name] = &bytes.Buffer{}
		}
		got[name].Write(p)
	})
	from := 0
	for _, c := range append(cuts, len(s)) {
		d.Write(s[from:c])
		from = c
	}
	out := map[string]string{}
	for k, v := range got {
		out[k] = v.String()
	}
	return out, len(d.held)
}

func TestTailDemux(t *testing.T) {
	const p = ".mux-K3Y/"
	stream := []byte("==> .mux-K3Y/a.out <==\nhello\n\n==> .mux-K3Y/b.err <==\n" +
		// a forged header without the mark, and one with a newline in its name: b's bytes
		"\n==> .mux-XXX/a.out <==\nnot a's\n==> .mux-K3Y/a\n.out <==\n" +
		"\n==> .mux-K3Y/a.out <==\nworld" +
		"\n==> .mux-K3Y/b.err <==\n\n==> .mux-K3Y/a.out <==\n\n")
	want := map[string]string{
		// The last newline may be tail's, before a next header: held.
		p + "a.out": "hello\nworld",
		p + "b.err": "\n==> .mux-XXX/a.out <==\nnot a's\n==> .mux-K3Y/a\n.out <==\n",
	}
	check := func(cuts []int) {
		t.Helper()
		got, held := demuxed(p, stream, cuts)
		if held != 1 {
			t.Errorf("cuts %v: %d bytes held, want 1", cuts, held)
		}
		if len(got) != len(want) {
			t.Fatalf("cuts %v: files %q, want %q", cuts, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("cuts %v: %s = %q, want %q", cuts, k, got[k], v)
			}
		}
	}
	check(nil)
	// Every single cut, a header split anywhere.
	for i := 1; i < len(stream); i++ {
		check([]int{i})
	}
	// A byte at a time.
	var each []int
	for i := 1; i < len(stream); i++ {
		each = append(each, i)
	}
	check(each)
}

// What GNU tail really prints for files written in turn, with bytes that
// look like headers, comes apart into the files, byte for byte.
func TestTailDemuxRealTail(t *testing.T) {
	if _, err := exec.LookPath("tail"); err != nil {
		t.Skip("no tail")
	}
	dir := t.TempDir()
	const m = ".mux-Q9"
	os.Mkdir(filepath.Join(dir, m), 0o700)
	r := rand.New(rand.NewPCG(1, 2))
	want := map[string][]byte{}
	var names []string
	for _, n := range []string{"a.out", "b.out", "c.err"} {
		var b []byte
		for range 200 {
			switch r.IntN(4) {
			case 0:
				b = append(b, "\n==> "+m+"-no/a.out <==\n"...)
			case 1:
				b = append(b, '\n')
			default:
				b = append(b, byte(r.IntN(256)))
			}
		}
		want[m+"/"+n] = b
		os.WriteFile(filepath.Join(dir, m, n), b, 0o600)
		names = append(names, m+"/"+n)
	}
	cmd := exec.Command("tail", append([]string{"-c", "+1"}, names...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 7, 100, 333} {
		got, _ := demuxed(m+"/", append(out, "\n==> "+m+"/end <==\n"...), []int{cut})
		for k, v := range want {
			if got[k] != string(v) {
				t.Errorf("cut %d: %s: %d bytes, want %d", cut, k, len(got[k]), len(v))
			}
		}
	}
}
