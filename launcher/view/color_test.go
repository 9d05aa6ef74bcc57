package view

import (
	"bytes"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/tfhive/tfhive/probe/testkit"
	"github.com/tfhive/tfhive/schedule"
)

func TestParseColorMode(t *testing.T) {
	for in, want := range map[string]ColorMode{"": ColorAuto, "auto": ColorAuto, "always": ColorAlways, "NEVER": ColorNever} {
		if got, err := ParseColorMode(in); err != nil || got != want {
			t.Errorf("ParseColorMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"yes", "1", "on", "tty"} {
		if _, err := ParseColorMode(in); err == nil {
			t.Errorf("ParseColorMode(%q) took it", in)
		}
	}
}

func TestUseColor(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		mode     ColorMode
		terminal bool
		getenv   func(string) string
		want     bool
	}{
		{ColorAuto, true, env("TERM", "xterm-256color"), true},
		{ColorAuto, true, env(), true},
		{ColorAuto, false, env("TERM", "xterm"), false},
		{ColorAuto, true, env("TERM", "dumb"), false},
		{ColorAuto, true, env("NO_COLOR", "1"), false},
		{ColorAuto, true, env("NO_COLOR", ""), true}, // set but empty: no-color.org says colour
		{ColorAlways, false, env("NO_COLOR", "1", "TERM", "dumb"), true},
		{ColorNever, true, env("TERM", "xterm"), false},
	} {
		if got := UseColor(c.mode, c.terminal, c.getenv); got != c.want {
			t.Errorf("UseColor(%s, terminal %v, NO_COLOR %q TERM %q) = %v", c.mode, c.terminal, c.getenv("NO_COLOR"), c.getenv("TERM"), got)
		}
	}
}

var sgrRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// The coloured status table is the plain one with SGR around each
// coloured state: the columns do not count the escape codes.
func TestStatusColor(t *testing.T) {
	inv, st := statusFleet()
	// Every coloured state, with states of unequal widths in one column.
	inv.Hosts[4].GPUs = append(inv.Hosts[4].GPUs, inv.Hosts[4].GPUs[0], inv.Hosts[4].GPUs[0], inv.Hosts[4].GPUs[0], inv.Hosts[4].GPUs[0])
	for i, s := range []schedule.GPUState{schedule.Claimed, schedule.Queued, schedule.Blocked, schedule.Refused} {
		inv.Hosts[4].GPUs[3+i].Index = 3 + i
		st[4] = append(st[4], schedule.GPUStatus{Index: 3 + i, State: s, Reason: "why"})
	}
	var plain, color bytes.Buffer
	if err := WriteStatusTable(&plain, inv, st, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteStatusTable(&color, inv, st, true); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join(statusGoldenDir, "color.txt"), color.Bytes())
	if got := sgrRE.ReplaceAll(color.Bytes(), nil); !bytes.Equal(got, plain.Bytes()) {
		t.Errorf("without its SGR codes, the coloured table differs:\n%s\nplain:\n%s", got, plain.Bytes())
	}
	for state, sgr := range map[string]string{"free": "32", "busy": "33", "claimed": "36", "queued": "94", "blocked": "31", "policy": "35", "unreachable": "31"} {
		if want := "\x1b[" + sgr + "m" + state + "\x1b[0m"; !bytes.Contains(color.Bytes(), []byte(want)) {
			t.Errorf("no %q in the coloured table", want)
		}
	}
	if bytes.Contains(plain.Bytes(), []byte("\x1b")) {
		t.Errorf("the plain table has an escape:\n%q", plain.Bytes())
	}
	// A host's bytes are sanitised before colour is added: its own
	// escape cannot pass for one of ours.
	inv.Hosts[0].Err.Message = "\x1b[32mfree\x1b[0m"
	color.Reset()
	WriteStatusTable(&color, inv, st, true)
	if first := bytes.SplitN(color.Bytes(), []byte("\n"), 3)[1]; bytes.Count(first, []byte("\x1b")) != 2 {
		t.Errorf("a host's escape reached the table:\n%q", first)
	}
}
