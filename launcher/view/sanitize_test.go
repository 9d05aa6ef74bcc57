package view

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/testkit"
	"github.com/tfhive/tfhive/schedule"
)

const sanitizeGoldenDir = "testdata/sanitize"

// sanitizeCases: input, console rendering (nil: same as input), cell
// rendering (nil: same as console), whether the console keeps an SGR.
var sanitizeCases = []struct {
	name          string
	in            string
	console, cell *string
	sgr           bool
}{
	{name: "ascii", in: "step 3/100 loss=0.25 acc=0.91"},
	{name: "utf-8", in: "ü € █▉ 日本 \U0001F680 \uFFFD \u00a0"},
	{name: "empty", in: ""},
	{name: "OSC 52 clipboard, BEL", in: "\x1b]52;c;cm0gLXJmIH4K\x07", console: sp("^[]52;c;cm0gLXJmIH4K^G")},
	{name: "OSC 52 clipboard, ST", in: "\x1b]52;c;cm0gLXJmIH4K\x1b\\", console: sp(`^[]52;c;cm0gLXJmIH4K^[\`)},
	{name: "OSC 0 title", in: "before\x1b]0;pwned\x07after", console: sp("before^[]0;pwned^Gafter")},
	{name: "OSC 8 hyperlink", in: "\x1b]8;;http://x/\x1b\\x\x1b]8;;\x1b\\", console: sp(`^[]8;;http://x/^[\x^[]8;;^[\`)},
	{name: "unterminated OSC", in: "\x1b]2;" + strings.Repeat("t", 100), console: sp("^[]2;" + strings.Repeat("t", 100))},
	{name: "CSI 2J", in: "\x1b[2J\x1b[H", console: sp("^[[2J^[[H")},
	{name: "CSI cursor up, erase line", in: "\x1b[1A\x1b[2K50%", console: sp("^[[1A^[[2K50%")},
	{name: "CSI alt screen", in: "\x1b[?1049h", console: sp("^[[?1049h")},
	{name: "CSI keyboard mode ending in m", in: "\x1b[>4;1m", console: sp("^[[>4;1m")},
	{name: "CSI intermediate byte", in: "\x1b[1 m", console: sp("^[[1 m")},
	{name: "SGR", in: "\x1b[31mred\x1b[0m plain", cell: sp("^[[31mred^[[0m plain"), sgr: true},
	{name: "SGR reset, empty", in: "\x1b[m", cell: sp("^[[m"), sgr: true},
	{name: "SGR truecolour with colons", in: "\x1b[38:2::255:0:0mx", cell: sp("^[[38:2::255:0:0mx"), sgr: true},
	{name: "SGR longest", in: "\x1b[" + strings.Repeat("1", sgrMaxParams) + "m", cell: sp("^[[" + strings.Repeat("1", sgrMaxParams) + "m"), sgr: true},
	{name: "SGR too long", in: "\x1b[" + strings.Repeat("1", sgrMaxParams+1) + "m", console: sp("^[[" + strings.Repeat("1", sgrMaxParams+1) + "m")},
	{name: "SGR cut off", in: "x\x1b[31", console: sp("x^[[31")},
	{name: "ESC at end", in: "x\x1b", console: sp("x^[")},
	{name: "ESC ESC SGR", in: "\x1b\x1b[1m", console: sp("^[\x1b[1m"), cell: sp("^[^[[1m"), sgr: true},
	{name: "DCS", in: "\x1bP+q544e\x1b\\", console: sp(`^[P+q544e^[\`)},
	{name: "APC PM SOS", in: "\x1b_a\x1b\\\x1b^b\x1b\\\x1bXc\x1b\\", console: sp(`^[_a^[\^[^b^[\^[Xc^[\`)},
	{name: "RIS and other ESC", in: "\x1bc\x1b7\x1b8\x1b(0", console: sp("^[c^[7^[8^[(0")},
	{name: "NUL BEL BS", in: "a\x00b\x07c\x08d", console: sp("a^@b^Gc^Hd")},
	{name: "DEL", in: "x\x7fy", console: sp("x^?y")},
	{name: "tab, newline", in: "a\tb\nc", cell: sp("a^Ib^Jc")},
	{name: "CR", in: "a\rb", console: sp("a^Mb")},
	{name: "C1 CSI in UTF-8", in: "\u009b2J", console: sp("\uFFFD2J")},
	{name: "C1 OSC and ST in UTF-8", in: "\u009d0;t\u009c", console: sp("\uFFFD0;t\uFFFD")},
	{name: "C1 NEL, last C1", in: "\u0085\u009f\u0080", console: sp("\uFFFD\uFFFD\uFFFD")},
	{name: "raw 0x9b CSI", in: "\x9b2J", console: sp("\uFFFD2J")},
	{name: "overlong ESC", in: "\xc0\x9b[2J", console: sp("\uFFFD\uFFFD[2J")},
	{name: "overlong C1 CSI", in: "\xe0\x82\x9b2J", console: sp("\uFFFD\uFFFD\uFFFD2J")},
	{name: "truncated rune then 0x9b", in: "\xe2\x9b2J", console: sp("\uFFFD\uFFFD2J")},
	{name: "surrogate", in: "\xed\xa0\x80", console: sp("\uFFFD\uFFFD\uFFFD")},
	{name: "bidi override", in: "file‮txt.exe", console: sp("file�txt.exe")},
	{name: "every bidi embedding, override and isolate", in: "a‪‫‬‭‮b⁦⁧⁨⁩c",
		console: sp("a�����b����c")},
	{name: "next to the bidi controls", in: "  ⁥⁪", console: sp("  ⁥⁪")},
	{name: "long line, late ESC", in: strings.Repeat("abcdefgh", 9) + "\x1b]0;x\x07", console: sp(strings.Repeat("abcdefgh", 9) + "^[]0;x^G")},
}

func sp(s string) *string { return &s }

func TestSanitize(t *testing.T) {
	for _, tc := range sanitizeCases {
		wantConsole := tc.in
		if tc.console != nil {
			wantConsole = *tc.console
		}
		wantCell := wantConsole
		if tc.cell != nil {
			wantCell = *tc.cell
		}
		prefix := []byte("[w:0 h] ")
		got, sgr := AppendSanitized(bytes.Clone(prefix), []byte(tc.in), ConsoleMode)
		if string(got) != string(prefix)+wantConsole || sgr != tc.sgr {
			t.Errorf("%s: console: %q -> %q, sgr %v; want %q, sgr %v", tc.name, tc.in, got[len(prefix):], sgr, wantConsole, tc.sgr)
		}
		if got := SanitizeCell(tc.in); got != wantCell {
			t.Errorf("%s: cell: %q -> %q, want %q", tc.name, tc.in, got, wantCell)
		}
	}
}

// sanitizeCheck fails if out could still drive a terminal: a control byte
// other than the mode's "\t" and "\n", an ESC that does not start an SGR, a
// C1 control, or invalid UTF-8.
func sanitizeCheck(t *testing.T, in, out []byte, mode SanitizeMode) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Fatalf("%q -> %q: not valid UTF-8", in, out)
	}
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRune(out[i:])
		switch {
		case r == 0x1b && mode == ConsoleMode && sgrLen(out[i:]) > 0:
			n = sgrLen(out[i:])
		case (r == '\t' || r == '\n') && mode == ConsoleMode:
		case r < 0x20 || r >= 0x7f && r < 0xa0 || bidiControl(r):
			t.Fatalf("%q -> %q: control %U at %d", in, out, r, i)
		}
		i += n
	}
}

// Random bytes, biased towards the interesting ones, come out safe; the
// printable ones come out as they went in; the cell check agrees with the
// cell sanitiser; the fast scan agrees with a byte loop.
func TestSanitizeRandom(t *testing.T) {
	alphabet := []byte("\x00\x07\x08\t\n\r\x1b\x1b\x1b[[[]]0123;:mmP\\_^X\x7f\x80\x9b\x9c\xc2\xc2\xe0\xe2\xed\xf0\xa0\xbfaé€")
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		in := make([]byte, rng.IntN(40))
		for i := range in {
			if rng.IntN(4) == 0 {
				in[i] = byte(rng.IntN(256))
			} else {
				in[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		for _, mode := range []SanitizeMode{ConsoleMode, CellMode} {
			out, _ := AppendSanitized(nil, in, mode)
			sanitizeCheck(t, in, out, mode)
		}
		cell := SanitizeCell(string(in))
		if needsSanitizing(string(in)) != (cell != string(in)) {
			t.Fatalf("needsSanitizing(%q) = %v, but the cell is %q", in, needsSanitizing(string(in)), cell)
		}
		want := 0
		for want < len(in) && in[want] >= 0x20 && in[want] < 0x7f {
			want++
		}
		if got := safePrefix(in); got != want {
			t.Fatalf("safePrefix(%q) = %d, want %d", in, got, want)
		}
	}
	for c := range 256 {
		// Each byte at each position of a word, the rest printable.
		for pos := range 9 {
			in := []byte("abcdefghi")
			in[pos] = byte(c)
			want := len(in)
			if c < 0x20 || c >= 0x7f {
				want = pos
			}
			if got := safePrefix(in); got != want {
				t.Fatalf("safePrefix(%q) = %d, want %d", in, got, want)
			}
		}
	}
}

// Every cell of a table is sanitised, the caller's rows are left alone, and
// a newline in a process name does not forge a row.
func TestTableSanitized(t *testing.T) {
	mib := func(n int) *int { return &n }
	hostile := "python train.py\n" + "gpu02  0  FAKE  0/0 MiB  0%  free"
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{{
		Name: "gpu01",
		GPUs: []inventory.GPU{{
			Index: 0, Name: "NVIDIA A100\x1b]0;owned\x07\u009b2J", MemoryUsedMiB: mib(100), MemoryTotalMiB: mib(40960), UtilizationPct: mib(5),
			Processes: []inventory.Process{{PID: 42, User: "mallory\x1b]52;c;cm0gLXJm\x07", Command: hostile}},
		}},
	}}}
	st := [][]schedule.GPUStatus{{{State: schedule.Busy, Reason: "in use"}}}
	var status bytes.Buffer
	if err := WriteStatusTable(&status, inv, st, false); err != nil {
		t.Fatal(err)
	}
	runs := []RunOnHost{{RunID: "r1\x1b[2J", User: "eve\x1b[8m", Host: "gpu01", Tasks: []string{"worker:0"}, GPUs: []int{0}, Ports: []int{2222},
		Since: time.Date(2026, 1, 1, 12, 0, 0, 0, time.Local)}}
	var ps bytes.Buffer
	if err := WriteRuns(&ps, runs, runs[0].Since.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if runs[0].User != "eve\x1b[8m" {
		t.Errorf("WriteRuns changed the caller's row: %q", runs[0].User)
	}
	for name, out := range map[string][]byte{"status.txt": status.Bytes(), "ps.txt": ps.Bytes()} {
		// One row: status's long DETAIL goes on in lines of its own, blank
		// but for that column, never one that starts as a row.
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[1], map[string]string{"status.txt": "gpu01 ", "ps.txt": "r1"}[name]) {
			t.Errorf("%s: want a header and one row:\n%s", name, out)
		}
		for _, l := range lines[min(2, len(lines)):] {
			if !strings.HasPrefix(l, "      ") {
				t.Errorf("%s: a second row:\n%s", name, out)
			}
		}
		sanitizeCheck(t, nil, out, ConsoleMode)
		if bytes.ContainsRune(out, 0x1b) {
			t.Errorf("%s: ESC in a table: %q", name, out)
		}
		testkit.Golden(t, filepath.Join(sanitizeGoldenDir, name), out)
	}
}

func BenchmarkSanitize(b *testing.B) {
	ascii := []byte("step 1234/100000 loss=0.123456 acc=0.9876 lr=1e-4 took 12.3ms")
	for _, tc := range []struct {
		name string
		line []byte
	}{
		{"ascii", ascii},
		{"utf-8", []byte("Epoch 3/10 ████████████▉       62% ETA 00:12 — loss 0.12")},
		{"sgr", []byte("\x1b[32mINFO\x1b[0m step 1234/100000 loss=0.123456 acc=0.9876")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.line)))
			b.ReportAllocs()
			dst := make([]byte, 0, 256)
			for b.Loop() {
				dst, _ = AppendSanitized(dst[:0], tc.line, ConsoleMode)
			}
		})
	}
}
