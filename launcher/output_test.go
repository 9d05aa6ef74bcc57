package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/testkit"
)

// outGateWriter blocks every Write until release is called: a console that
// does not read at all. entered is closed when the first Write starts.
type outGateWriter struct {
	testkit.SyncBuffer
	gate      chan struct{}
	entered   chan struct{}
	enterOnce sync.Once
	relOnce   sync.Once
	mu        sync.Mutex
	writes    int // Write calls, under mu
}

func newOutGateWriter() *outGateWriter {
	return &outGateWriter{gate: make(chan struct{}), entered: make(chan struct{})}
}

func (g *outGateWriter) Write(p []byte) (int, error) {
	g.enterOnce.Do(func() { close(g.entered) })
	<-g.gate
	g.mu.Lock()
	g.writes++
	g.mu.Unlock()
	return g.SyncBuffer.Write(p)
}

func (g *outGateWriter) release() { g.relOnce.Do(func() { close(g.gate) }) }

// outWriteChunks writes p to w in random pieces of 1 to max bytes.
func outWriteChunks(t testing.TB, w io.Writer, p []byte, rng *rand.Rand, max int) {
	for len(p) > 0 {
		n := min(1+rng.IntN(max), len(p))
		if k, err := w.Write(p[:n]); k != n || err != nil {
			t.Errorf("Write = %d, %v; want %d, nil", k, err, n)
			return
		}
		p = p[n:]
	}
}

// outWriteSplit writes input to w in two writes, split at split, or one
// byte at a time when split is len(input)+1: the ways a stream may cut
// what a task printed.
func outWriteSplit(w io.Writer, input string, split int) {
	if split <= len(input) {
		io.WriteString(w, input[:split])
		io.WriteString(w, input[split:])
		return
	}
	for i := range len(input) {
		w.Write([]byte{input[i]})
	}
}

// outCloseConsole closes c and returns its lines (without the last "\n").
func outCloseConsole(t *testing.T, c *Console, buf interface{ String() string }) []string {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatalf("Console.Close: %v", err)
	}
	s := buf.String()
	if s == "" {
		return nil
	}
	if !strings.HasSuffix(s, "\n") {
		t.Errorf("console output does not end with a newline: %q", s[max(0, len(s)-40):])
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func outEqualLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d lines, want %d\ngot  %q\nwant %q", what, len(got), len(want), outShort(got), outShort(want))
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: line %d = %q, want %q\ngot  %q\nwant %q", what, i,
				outShort([]string{got[i]})[0], outShort([]string{want[i]})[0], outShort(got), outShort(want))
			return
		}
	}
}

// outShort abbreviates long lines and long lists for error messages.
func outShort(lines []string) []string {
	var r []string
	for i, l := range lines {
		if i == 20 {
			r = append(r, fmt.Sprintf("... %d more", len(lines)-i))
			break
		}
		if len(l) > 80 {
			l = fmt.Sprintf("%s...(%d bytes)...%s", l[:30], len(l), l[len(l)-30:])
		}
		r = append(r, l)
	}
	return r
}

// outWithin runs f and fails the test if it does not return within d:
// f must not wait for a blocked console.
func outWithin(t *testing.T, d time.Duration, gw *outGateWriter, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		gw.release() // let the goroutines finish
		t.Fatalf("%s did not complete while the console was blocked: a slow console blocks its callers", what)
	}
}

func TestOutputManyTasksBlockedConsole(t *testing.T) {
	const (
		tasks    = 8
		outLines = 100_000
		errLines = 10_000
	)
	gw := newOutGateWriter()
	defer gw.release()
	c := NewConsole(gw, false)
	outWithin(t, 10*time.Second, gw, "Printf", func() { c.Printf("tfhive: starting %d tasks", tasks) })
	select { // from here on the console's writer is stuck
	case <-gw.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the console did not start writing")
	}

	type task struct {
		label     string
		errPrefix string
		log       bytes.Buffer
		out       *TaskOutput
		want      [2][]string // lines written to stdout, stderr
		contents  [2][]byte
	}
	ts := make([]*task, tasks)
	filler := strings.Repeat("x", 40)
	for i := range ts {
		tk := &task{label: fmt.Sprintf("worker:%d gpu%02d", i, i), errPrefix: fmt.Sprintf("t%d err ", i)}
		tk.out = c.Task(tk.label, &tk.log, false)
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		for s, n := range []int{outLines, errLines} {
			var b bytes.Buffer
			for j := range n {
				line := fmt.Sprintf("t%d %s %06d ", i, [2]string{"out", "err"}[s], j) + filler[:rng.IntN(40)]
				tk.want[s] = append(tk.want[s], line)
				b.WriteString(line)
				b.WriteByte('\n')
			}
			tk.contents[s] = b.Bytes()
		}
		ts[i] = tk
	}

	outWithin(t, 60*time.Second, gw, "task writes", func() {
		var wg sync.WaitGroup
		for i, tk := range ts {
			for s, w := range []io.Writer{tk.out.Stdout(), tk.out.Stderr()} {
				wg.Go(func() {
					outWriteChunks(t, w, tk.contents[s], rand.New(rand.NewPCG(uint64(i), uint64(s)+7)), 300)
				})
			}
		}
		wg.Wait()
	})
	// Every log is complete before Close, as only partial lines wait for it.
	for _, tk := range ts {
		if got, want := tk.log.Len(), len(tk.contents[0])+len(tk.contents[1]); got != want {
			t.Errorf("%s: log has %d bytes before Close, want %d", tk.label, got, want)
		}
	}

	gw.release()
	for _, tk := range ts {
		if err := tk.out.Close(); err != nil {
			t.Errorf("%s: Close: %v", tk.label, err)
		}
	}
	lines := outCloseConsole(t, c, gw)
	gw.mu.Lock()
	writes := gw.writes
	gw.mu.Unlock()
	if writes < 2 || writes > len(lines)/100 {
		t.Errorf("console got %d Write calls for %d lines; want them batched", writes, len(lines))
	}

	// Logs: each stream's lines in order, whole, none lost.
	for i, tk := range ts {
		var next [2]int
		errPrefix := fmt.Sprintf("t%d err ", i)
		for n, line := range strings.Split(strings.TrimSuffix(tk.log.String(), "\n"), "\n") {
			s := 0
			if strings.HasPrefix(line, errPrefix) {
				s = 1
			}
			if next[s] >= len(tk.want[s]) || line != tk.want[s][next[s]] {
				t.Fatalf("%s: log line %d = %q, want stream %d line %d", tk.label, n, line, s, next[s])
			}
			next[s]++
		}
		if next[0] != outLines || next[1] != errLines {
			t.Errorf("%s: log has %d stdout and %d stderr lines, want %d and %d", tk.label, next[0], next[1], outLines, errLines)
		}
	}

	// Console: tfhive's line first, then every task line with its prefix,
	// in order per stream.
	if len(lines) == 0 || lines[0] != "tfhive: starting 8 tasks" {
		t.Fatalf("first console line = %q", lines[:min(1, len(lines))])
	}
	byLabel := map[string]int{}
	for i, tk := range ts {
		byLabel[tk.label] = i
	}
	next := make([][2]int, tasks)
	for n, line := range lines[1:] {
		label, text, ok := strings.Cut(strings.TrimPrefix(line, "["), "] ")
		i, known := byLabel[label]
		if !strings.HasPrefix(line, "[") || !ok || !known {
			t.Fatalf("console line %d has no task prefix: %q", n+1, line)
		}
		s := 0
		if strings.HasPrefix(text, ts[i].errPrefix) {
			s = 1
		}
		want := ts[i].want[s]
		if next[i][s] >= len(want) || text != want[next[i][s]] {
			t.Fatalf("console line %d = %q, want %s stream %d line %d", n+1, line, ts[i].label, s, next[i][s])
		}
		next[i][s]++
	}
	for i := range ts {
		if next[i] != [2]int{outLines, errLines} {
			t.Errorf("%s: console has %v stdout/stderr lines, want %d/%d", ts[i].label, next[i], outLines, errLines)
		}
	}
}

func TestOutputLogWholeLinesAndFinalLine(t *testing.T) {
	var buf testkit.SyncBuffer
	c := NewConsole(&buf, false)
	var log bytes.Buffer
	o := c.Task("ps:0 gpu01", &log, false)
	step := func(w io.Writer, s, wantLog string) {
		t.Helper()
		if _, err := io.WriteString(w, s); err != nil {
			t.Fatal(err)
		}
		if log.String() != wantLog {
			t.Errorf("after writing %q, log = %q, want %q", s, log.String(), wantLog)
		}
	}
	step(o.Stdout(), "a\nb", "a\n")
	step(o.Stderr(), "x\ny", "a\nx\n")
	step(o.Stdout(), "c\nd", "a\nx\nbc\n")
	step(o.Stderr(), "z\n", "a\nx\nbc\nyz\n")
	step(o.Stdout(), "", "a\nx\nbc\nyz\n")
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if want := "a\nx\nbc\nyz\nd"; log.String() != want {
		t.Errorf("log after Close = %q, want %q", log.String(), want)
	}
	outEqualLines(t, "console", outCloseConsole(t, c, &buf), []string{
		"[ps:0 gpu01] a", "[ps:0 gpu01] x", "[ps:0 gpu01] bc", "[ps:0 gpu01] yz", "[ps:0 gpu01] d",
	})
}

func TestOutputCarriageReturnThrottle(t *testing.T) {
	var buf testkit.SyncBuffer
	c := NewConsole(&buf, false)
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return clock }
	var log bytes.Buffer
	o := c.Task("w:0 h", &log, false)
	var raw strings.Builder
	steps := []struct {
		at     time.Duration
		stream io.Writer
		s      string
	}{
		{0, o.Stdout(), "Epoch 1\n"},
		{0, o.Stdout(), "\r  0%"},
		{100 * time.Millisecond, o.Stdout(), "\r 10%"},    // "  0%" ends at 0.1s: first frame, printed
		{500 * time.Millisecond, o.Stdout(), "\r 20%"},    // " 10%" at 0.5s: too soon, dropped
		{1100 * time.Millisecond, o.Stdout(), "\r 30%\r"}, // " 20%" at 1.1s: printed; " 30%" ends at 1.1s
		{1200 * time.Millisecond, o.Stderr(), "\rwarn"},   // stderr has its own throttle
		{1300 * time.Millisecond, o.Stdout(), " 40%"},     // " 30%" dropped
		{1300 * time.Millisecond, o.Stderr(), "ing\r"},    // "warning" first stderr frame
		{1300 * time.Millisecond, o.Stderr(), "again\r"},  // "warning" printed, "again" held
		{1500 * time.Millisecond, o.Stdout(), "\r100%\n"}, // " 40%" dropped; "100%" ends the line: printed
		{1600 * time.Millisecond, o.Stdout(), "\r"},       // empty frame: never printed
		{1700 * time.Millisecond, o.Stdout(), "\rA\r"},    // "A" held at 1.7s
		{5 * time.Second, o.Stdout(), "B\r"},              // "A" judged by 1.7s: dropped; "B" held
		{6 * time.Second, o.Stdout(), "C"},                // "B" at 5s: printed
		{6 * time.Second, o.Stderr(), "\n"},               // "again" is stderr's final text
	}
	for _, st := range steps {
		clock = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(st.at)
		if _, err := io.WriteString(st.stream, st.s); err != nil {
			t.Fatal(err)
		}
		raw.WriteString(st.s)
	}
	if err := o.Close(); err != nil { // "C" is stdout's final text, without "\n"
		t.Fatal(err)
	}
	outEqualLines(t, "console", outCloseConsole(t, c, &buf), []string{
		"[w:0 h] Epoch 1",
		"[w:0 h]   0%",
		"[w:0 h]  20%",
		"[w:0 h] warning",
		"[w:0 h] 100%",
		"[w:0 h] B",
		"[w:0 h] again",
		"[w:0 h] C",
	})
	// The log has the raw bytes, "\r" included (the two streams' bytes
	// regrouped by line, so compare stdout's only).
	if !strings.Contains(log.String(), "\r  0%\r 10%\r 20%\r 30%\r 40%\r100%\n") {
		t.Errorf("log lacks the raw progress bar: %q", log.String())
	}
	if got, want := log.Len(), raw.Len(); got != want {
		t.Errorf("log has %d bytes, want %d", got, want)
	}
}

func TestOutputCRLF(t *testing.T) {
	const input = "a\r\nb\r\n\r\nc\r\r\nd\n\ne\r\nf\r"
	want := []string{"[w:0 h] a", "[w:0 h] b", "[w:0 h]", "[w:0 h] c", "[w:0 h] d", "[w:0 h]", "[w:0 h] e", "[w:0 h] f"}
	// Every split of the input into two writes, and one byte at a time,
	// gives the same lines.
	for split := 0; split <= len(input)+1; split++ {
		var buf testkit.SyncBuffer
		c := NewConsole(&buf, false)
		var log bytes.Buffer
		o := c.Task("w:0 h", &log, false)
		outWriteSplit(o.Stdout(), input, split)
		o.Close()
		outEqualLines(t, fmt.Sprintf("split %d: console", split), outCloseConsole(t, c, &buf), want)
		if log.String() != input {
			t.Errorf("split %d: log = %q, want %q", split, log.String(), input)
		}
	}
}

func TestOutputLongLines(t *testing.T) {
	var buf testkit.SyncBuffer
	c := NewConsole(&buf, false)
	var log bytes.Buffer
	o := c.Task("w:0 h", &log, false)

	// 10 MiB without a newline, in one Write: memory stays bounded and the
	// log gets it at once.
	huge := bytes.Repeat([]byte("x"), 10<<20)
	o.Stdout().Write(huge)
	if log.Len() != len(huge) {
		t.Errorf("log has %d bytes after a 10 MiB partial line, want all of it", log.Len())
	}
	if s := &o.out; cap(s.cur) > 2*outMaxLine || cap(s.logPart) > 2*outMaxLine || cap(o.batch) > 4*outMaxLine {
		t.Errorf("stream keeps %d+%d+%d bytes for a long line", cap(s.cur), cap(s.logPart), cap(o.batch))
	}
	io.WriteString(o.Stdout(), "tail\nshort\n")

	// A long line in small pieces, of 3-byte runes, cut between runes.
	euro := strings.Repeat("€", 30000) // 90000 bytes
	outWriteChunks(t, o.Stderr(), []byte(euro+"\n"), rand.New(rand.NewPCG(1, 2)), 5000)
	o.Close()

	lines := outCloseConsole(t, c, &buf)
	var want []string
	for range 160 {
		want = append(want, "[w:0 h] "+strings.Repeat("x", outMaxLine))
	}
	want = append(want, "[w:0 h] tail", "[w:0 h] short",
		"[w:0 h] "+euro[:outMaxLine-1], "[w:0 h] "+euro[outMaxLine-1:])
	outEqualLines(t, "console", lines, want)
	for i, l := range lines {
		if !utf8.ValidString(l) {
			t.Errorf("console line %d is not valid UTF-8", i)
		}
	}
	if want := string(huge) + "tail\nshort\n" + euro + "\n"; log.String() != want {
		t.Errorf("log differs from the raw output (%d bytes, want %d)", log.Len(), len(want))
	}
}

func TestOutputColor(t *testing.T) {
	for _, color := range []bool{false, true} {
		var buf testkit.SyncBuffer
		c := NewConsole(&buf, color)
		c.Printf("tfhive: plain")
		for i := range 7 {
			o := c.Task(fmt.Sprintf("t%d", i), nil, false)
			io.WriteString(o.Stderr(), "hi\n")
			o.Close()
		}
		lines := outCloseConsole(t, c, &buf)
		want := []string{"tfhive: plain"}
		for i := range 7 {
			p := fmt.Sprintf("[t%d]", i)
			if color {
				p = "\x1b[" + []string{"36", "33", "32", "35", "94", "31", "36"}[i] + "m" + p + "\x1b[0m"
			}
			want = append(want, p+" hi")
		}
		outEqualLines(t, fmt.Sprintf("color=%v", color), lines, want)
		if !color && strings.Contains(buf.String(), "\x1b") {
			t.Errorf("escape codes without colour: %q", buf.String())
		}
	}
}

func TestOutputQuiet(t *testing.T) {
	var buf testkit.SyncBuffer
	c := NewConsole(&buf, false)
	var log bytes.Buffer
	o := c.Task("w:0 h", &log, true)
	io.WriteString(o.Stdout(), "one\ntw")
	io.WriteString(o.Stderr(), "\rbar\r")
	c.Printf("tfhive: w:0 on h exited 3\n")
	o.Close()
	outEqualLines(t, "console", outCloseConsole(t, c, &buf), []string{"tfhive: w:0 on h exited 3"})
	if want := "one\ntw\rbar\r"; log.String() != want {
		t.Errorf("log = %q, want %q", log.String(), want)
	}
}

func TestOutputWriteAfterClose(t *testing.T) {
	var buf testkit.SyncBuffer
	c := NewConsole(&buf, false)
	var log bytes.Buffer
	o := c.Task("w:0 h", &log, false)
	io.WriteString(o.Stdout(), "a\n")
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, w := range []io.Writer{o.Stdout(), o.Stderr()} {
		if n, err := io.WriteString(w, "late\n"); n != 0 || !errors.Is(err, errOutputClosed) {
			t.Errorf("Write after Close = %d, %v; want 0, %v", n, err, errOutputClosed)
		}
	}

	// A task still open when the console closes keeps its log.
	var log2 bytes.Buffer
	o2 := c.Task("w:1 h", &log2, false)
	io.WriteString(o2.Stdout(), "before\n")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Console.Close: %v", err)
	}
	c.Printf("tfhive: dropped")
	io.WriteString(o2.Stdout(), "after\npart")
	o3 := c.Task("w:2 h", nil, false)
	io.WriteString(o3.Stdout(), "x\n")
	o3.Close()
	o2.Close()
	if want := "before\nafter\npart"; log2.String() != want {
		t.Errorf("log = %q, want %q", log2.String(), want)
	}
	if want := "[w:0 h] a\n[w:1 h] before\n"; buf.String() != want {
		t.Errorf("console = %q, want %q", buf.String(), want)
	}
	if log.String() != "a\n" {
		t.Errorf("log of closed task = %q", log.String())
	}
}

type outFailWriter struct {
	mu    sync.Mutex
	calls int
	err   error
}

func (f *outFailWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return 0, f.err
}

func TestOutputConsoleWriteError(t *testing.T) {
	fw := &outFailWriter{err: errors.New("broken pipe")}
	c := NewConsole(fw, false)
	o := c.Task("w:0 h", nil, false)
	for i := range 1000 {
		c.Printf("tfhive: %d", i)
		fmt.Fprintf(o.Stdout(), "line %d\n", i)
	}
	o.Close()
	if err := c.Close(); !errors.Is(err, fw.err) {
		t.Errorf("Close = %v, want %v", err, fw.err)
	}
	if fw.calls != 1 {
		t.Errorf("writer called %d times after failing, want once", fw.calls)
	}
}

func TestOutputLogWriteError(t *testing.T) {
	var buf testkit.SyncBuffer
	c := NewConsole(&buf, false)
	fw := &outFailWriter{err: errors.New("disk full")}
	o := c.Task("w:0 h", fw, false)
	for _, s := range []string{"a\n", "b\n", "c"} {
		if n, err := io.WriteString(o.Stdout(), s); n != len(s) || err != nil {
			t.Errorf("Write(%q) = %d, %v; a broken log must not stop the task's output", s, n, err)
		}
	}
	if err := o.Close(); !errors.Is(err, fw.err) {
		t.Errorf("Close = %v, want %v", err, fw.err)
	}
	if err := o.Close(); !errors.Is(err, fw.err) {
		t.Errorf("second Close = %v, want %v", err, fw.err)
	}
	if fw.calls != 1 {
		t.Errorf("log written %d times after failing, want once", fw.calls)
	}
	outEqualLines(t, "console", outCloseConsole(t, c, &buf), []string{
		"tfhive: w:0 h: writing log: disk full; the rest of its output is not logged",
		"[w:0 h] a", "[w:0 h] b", "[w:0 h] c",
	})
}

func TestOutputPrintfNewline(t *testing.T) {
	var buf testkit.SyncBuffer
	c := NewConsole(&buf, false)
	c.Printf("tfhive: %s", "x")
	c.Printf("tfhive: y\n")
	c.Printf("")
	c.Close()
	if want := "tfhive: x\ntfhive: y\n\n"; buf.String() != want {
		t.Errorf("console = %q, want %q", buf.String(), want)
	}
}

// BenchmarkConsoleThroughput measures task output through the console to
// io.Discard (logs to io.Discard too), in 32 KiB writes as io.Copy makes.
func BenchmarkConsoleThroughput(b *testing.B) {
	var chunk []byte
	for i := 0; len(chunk) < 32<<10-100; i++ {
		chunk = fmt.Appendf(chunk, "step %d/100000 loss=%.6f acc=%.4f lr=1e-4\n", i, 1/float64(i+1), float64(i%10000)/10000)
	}
	for _, tc := range []struct {
		tasks int
		color bool
		cr    bool
	}{{1, false, false}, {8, false, false}, {8, true, false}, {1, false, true}} {
		name := fmt.Sprintf("tasks=%d", tc.tasks)
		if tc.color {
			name += "/color"
		}
		data := chunk
		if tc.cr {
			name += "/progress"
			data = bytes.ReplaceAll(chunk, []byte("\n"), []byte("\r"))
		}
		b.Run(name, func(b *testing.B) {
			c := NewConsole(io.Discard, tc.color)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var wg sync.WaitGroup
			for k := range tc.tasks {
				o := c.Task(fmt.Sprintf("worker:%d gpu%02d", k, k), io.Discard, false)
				wg.Go(func() {
					w := o.Stdout()
					for i := k; i < b.N; i += tc.tasks {
						w.Write(data)
					}
					o.Close()
				})
			}
			wg.Wait()
			c.Close()
		})
	}
}

// On a terminal the console keeps colours, tabs and "\r" progress frames and
// shows every other control byte inert, however the output is split into
// writes; not on a terminal it carries the task's bytes; the log always
// has every byte.
func TestOutputTerminalSanitized(t *testing.T) {
	const input = "\x1b[32mok\x1b[0m done\n" +
		"\x1b]52;c;cm0gLXJmIH4K\x07clip\n" +
		"\x1b]0;title\x1b\\t\n" +
		"\x1b[2J\x1b[Hclear\n" +
		"a\x00b\x07c\td\x7f\n" +
		"\u009b2J\x9b2J\xc0\x9b\n" +
		"\x1b[8mhidden\n" +
		"\x1b]2;open " + "\n" +
		"\r 50%\x1b[K\r100%\x1b[K\n" +
		"last\x1b"
	for _, tty := range []bool{true, false} {
		prefix := "[w:0 h]"
		want := []string{
			"\x1b[32mok\x1b[0m done\x1b[0m",
			"^[]52;c;cm0gLXJmIH4K^Gclip",
			`^[]0;title^[\t`,
			"^[[2J^[[Hclear",
			"a^@b^Gc\td^?",
			"\uFFFD2J\uFFFD2J\uFFFD\uFFFD",
			"\x1b[8mhidden\x1b[0m",
			"^[]2;open ",
			" 50%^[[K",
			"100%^[[K",
			"last^[",
		}
		own := "tfhive: w:1 on h could not start: sh: \x1b]0;x\x07: not found"
		wantOwn := "tfhive: w:1 on h could not start: sh: ^[]0;x^G: not found"
		if tty {
			prefix = "\x1b[36m" + prefix + view.SGRReset
		} else {
			// The same lines, raw: tfhive adds no colour and no reset.
			want = []string{
				"\x1b[32mok\x1b[0m done",
				"\x1b]52;c;cm0gLXJmIH4K\x07clip",
				"\x1b]0;title\x1b\\t",
				"\x1b[2J\x1b[Hclear",
				"a\x00b\x07c\td\x7f",
				"\u009b2J\x9b2J\xc0\x9b",
				"\x1b[8mhidden",
				"\x1b]2;open ",
				" 50%\x1b[K",
				"100%\x1b[K",
				"last\x1b",
			}
			wantOwn = own
		}
		for i := range want {
			want[i] = prefix + " " + want[i]
		}
		want = append(want, wantOwn)

		// Every split into two writes, and one byte at a time.
		for split := 0; split <= len(input)+1; split++ {
			var buf testkit.SyncBuffer
			c := NewConsole(&buf, tty)
			var log bytes.Buffer
			o := c.Task("w:0 h", &log, false)
			outWriteSplit(o.Stdout(), input, split)
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			c.Printf("%s", own)
			outEqualLines(t, fmt.Sprintf("tty=%v split %d: console", tty, split), outCloseConsole(t, c, &buf), want)
			if log.String() != input {
				t.Errorf("tty=%v split %d: log = %q, want the raw %q", tty, split, log.String(), input)
			}
			if t.Failed() {
				return // one split's report is enough
			}
		}
	}
}

// A console's record (Record: a run's console.log) gets every line the
// terminal gets, without colour or sanitising, and a quiet task's lines,
// which the terminal does not; the task's log is written once.
func TestOutputRecord(t *testing.T) {
	var term, rec, log testkit.SyncBuffer
	c := NewColorConsole(&term, true, true)
	c.Record(&rec)
	loud := c.Task("worker:0 h1", &log, false)
	quiet := c.Task("worker:1 h2", &log, true)
	c.Printf("tfhive: run r1: 2 tasks")
	io.WriteString(loud.Stdout(), "loud \x1b]0;title\x07line\n")
	io.WriteString(quiet.Stderr(), "quiet line\npartial")
	loud.Close()
	quiet.Close()
	c.Close()
	if got, want := rec.String(), "tfhive: run r1: 2 tasks\n[worker:0 h1] loud \x1b]0;title\x07line\n[worker:1 h2] quiet line\n[worker:1 h2] partial\n"; got != want {
		t.Errorf("record %q, want %q", got, want)
	}
	if strings.Contains(term.String(), "quiet") || !strings.Contains(term.String(), "loud") || strings.Contains(term.String(), "\x1b]0;") {
		t.Errorf("terminal %q", term.String())
	}
	if got := log.String(); got != "loud \x1b]0;title\x07line\nquiet line\npartial" {
		t.Errorf("log %q", got)
	}
}

// The last lines a task wrote on stderr: at most five, blank ones left
// out, each cut at 200 bytes on a character's boundary, the last one
// without its newline too.
func TestOutputLastErrLines(t *testing.T) {
	c := NewConsole(io.Discard, false)
	o := c.Task("worker:0 h1", nil, true)
	io.WriteString(o.Stdout(), "not this\n")
	io.WriteString(o.Stderr(), "one\n\n  \ntwo\nthr")
	io.WriteString(o.Stderr(), "ee\n"+strings.Repeat("é", 150)+"\nfive\nsix\nValueError: did not")
	io.WriteString(o.Stderr(), " converge")
	o.Close()
	c.Close()
	got := o.LastErrLines()
	want := []string{"three", strings.Repeat("é", 100), "five", "six", "ValueError: did not converge"}
	if !slices.Equal(got, want) {
		t.Errorf("last lines %q, want %q", got, want)
	}
}

// slowWriter takes its time over each write, as a file on a busy disk may,
// and says what it holds only under its lock.
type slowWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(20 * time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *slowWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// A detached run's tfhive returns on the keeper's "started", and reads
// the console right after (CI: TestUserHostsFile found it empty):
// Flush returns only once the console's writer (a keeper's console.log)
// and its record hold every line queued.
func TestOutputFlush(t *testing.T) {
	out, rec := &slowWriter{}, &slowWriter{}
	c := NewConsole(out, false)
	c.Record(rec)
	for i := range 3 {
		c.Printf("tfhive: line %d", i)
		c.Flush()
		want := fmt.Sprintf("tfhive: line %d\n", i)
		if !strings.HasSuffix(out.String(), want) || !strings.HasSuffix(rec.String(), want) {
			t.Fatalf("after Flush the console holds %q and the record %q, want both to end in %q", out.String(), rec.String(), want)
		}
	}
	c.Close()
	c.Flush()                             // after Close: returns at once
	NewConsole(io.Discard, false).Flush() // no record, nothing queued
}
