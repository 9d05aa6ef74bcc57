package hosts

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestExpandRanges(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"gpu01", []string{"gpu01"}},
		{"h[1-3]", []string{"h1", "h2", "h3"}},
		{"gpu[01-03]", []string{"gpu01", "gpu02", "gpu03"}}, // zero padding kept
		{"gpu[08-10]", []string{"gpu08", "gpu09", "gpu10"}},
		{"n[9-11]", []string{"n9", "n10", "n11"}},
		{"h[1-3,7]", []string{"h1", "h2", "h3", "h7"}}, // lists and ranges mixed
		{"h[7,1-2]", []string{"h7", "h1", "h2"}},       // in the order written
		{"rack[1-2]-n[1-2]", []string{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}},
		{"h[1-2].lab", []string{"h1.lab", "h2.lab"}},
		{"root@h[1-2]:2222", []string{"root@h1:2222", "root@h2:2222"}},
		{"[1-2]h", []string{"1h", "2h"}},
		// OpenSSH's brackets are not ranges.
		{"[::1]:2222", []string{"[::1]:2222"}},
		{"bob@[gpu01]:22", []string{"bob@[gpu01]:22"}},
	}
	for _, tt := range tests {
		got, err := expandRanges(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("expandRanges(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestExpandRangesBad(t *testing.T) {
	tests := []struct{ in, err string }{
		{"h[3-1]", "bad host range: 3-1 runs backwards"},
		{"h[a-c]", "bad host range: [a-c] is not a range (want numbers and ranges, e.g. [1-4,7] or [01-08])"},
		{"h[1-]", "bad host range: [1-] is not a range (want numbers and ranges, e.g. [1-4,7] or [01-08])"},
		{"h[]", "bad host range: [] is not a range (want numbers and ranges, e.g. [1-4,7] or [01-08])"},
		{"h[1-3/2]", "bad host range: [1-3/2] is not a range (want numbers and ranges, e.g. [1-4,7] or [01-08])"},
		{"h[1-3", "bad host range: [ without ]"},
		{"h1-3]", "bad host range: ] without ["},
		{"h[1-[2]]", "bad host range: brackets do not nest"},
		{"h[0-4096]", "bad host range: more than 4096 hosts"},
		{"h[1-99999999999999999999]", "bad host range: 1-99999999999999999999 is too large"},
		{"a[1-100]b[1-100]", "bad host range: more than 4096 hosts"}, // the product counts
		{"h[1-4000,1-4000]", "bad host range: more than 4096 hosts"},
	}
	for _, tt := range tests {
		got, err := expandRanges(tt.in)
		if err == nil || err.Error() != tt.err {
			t.Errorf("expandRanges(%q) = %q, %v; want error %q", tt.in, got, err, tt.err)
		}
	}
	if got, err := expandRanges("h[1-4096]"); err != nil || len(got) != 4096 {
		t.Errorf("h[1-4096]: %d hosts, %v; want 4096", len(got), err)
	}
}

func TestSplitHostListRanges(t *testing.T) {
	got := splitHostFlags([]string{"h[1-3,7],g1", "x[01-02]"})
	want := []string{"h[1-3,7]", "g1", "x[01-02]"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseHostfile(t *testing.T) {
	data := "# a DeepSpeed hostfile\n\ngpu01 slots=4\ngpu02 slots=2 max_slots=8 # OpenMPI\n" +
		"gpu03:3\ngpu[04-05] slots=1\nbob@gpu06\n  gpu07   count=2  \n"
	hf, err := parseHostfile("hf", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range hf.Hosts {
		got = append(got, fmt.Sprintf("%s/%d@%d", e.Address, e.Slots, e.Line))
	}
	want := []string{"gpu01/4@3", "gpu02/2@4", "gpu03/3@5", "gpu04/1@6", "gpu05/1@6", "bob@gpu06/0@7", "gpu07/2@8"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestParseHostfileBad(t *testing.T) {
	tests := []struct{ in, err string }{
		{"", "hf: no hosts (a hostfile lists `host slots=N`, one a line)"},
		{"# only\n\n", "hf: no hosts (a hostfile lists `host slots=N`, one a line)"},
		{"h1 slots=0", "hf:1: bad slots=0 (want a whole number, 1 or more)"},
		{"h1 slots=x", "hf:1: bad slots=x (want a whole number, 1 or more)"},
		{"h1\nh2 cpu=4", "hf:2: unknown key \"cpu\" (a hostfile line is `host slots=N [max_slots=M]`)"},
		{"h1 4", "hf:1: \"4\": expected key=value (slots=N)"},
		{"h1 slots=2 slots=3", "hf:1: slots given twice"},
		{"h1:2 slots=3", "hf:1: slots given twice"},
		{"h1 slots=4 max_slots=2", "hf:1: max_slots=2 is below slots=4"},
		{"h1:0", "hf:1: h1:0: bad slot count \"0\" (host:N is N slots in a hostfile; the port comes from the ssh config)"},
		{"h[2-1] slots=1", "hf:1: bad host range: 2-1 runs backwards"},
	}
	for _, tt := range tests {
		_, err := parseHostfile("hf", []byte(tt.in))
		if err == nil || err.Error() != tt.err {
			t.Errorf("parseHostfile(%q): %v; want %q", tt.in, err, tt.err)
		}
	}
}

func TestHostsFileRanges(t *testing.T) {
	hf, err := parseHostsFile("h.yaml", []byte("hosts:\n  - gpu[01-02]\n  - address: bob@n[1-2]:2222\n    gpus: [0]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range hf.Hosts {
		got = append(got, fmt.Sprintf("%s%v@%d", e.Address, e.GPUs, e.Line))
	}
	want := []string{"gpu01[]@2", "gpu02[]@2", "bob@n1:2222[0]@3", "bob@n2:2222[0]@3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	_, err = parseHostsFile("h.yaml", []byte("hosts:\n  - address: n[1-2]\n    name: one\n"))
	if err == nil || !strings.Contains(err.Error(), "h.yaml:2: address n[1-2] is a host range: it cannot have one name: or cluster_address:") {
		t.Errorf("a range with a name: %v", err)
	}
}

func TestLoadRangesAndHostfile(t *testing.T) {
	e := newLoadEnv(t, "Host h1\n  HostName 10.0.0.1\n  Port 2201\nHost h2\n  HostName 10.0.0.2\n")
	hs, err := Load(e.opts(Options{Flags: []string{"bob@g[1-2]:2222,h[1-2]"}}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hs {
		got = append(got, fmt.Sprintf("%s@%s:%d", h.User, h.Address, h.Port))
	}
	want := []string{"bob@g1:2222", "bob@g2:2222", "me@10.0.0.1:2201", "me@10.0.0.2:22"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("-H: got %q, want %q", got, want)
	}
	if _, err := Load(e.opts(Options{Flags: []string{"g[2-1]"}})); err == nil || err.Error() != "-H g[2-1]: bad host range: 2-1 runs backwards" {
		t.Errorf("bad -H range: %v", err)
	}
	if _, err := Load(e.opts(Options{Flags: []string{"g[1-2],g2"}})); err == nil || !strings.Contains(err.Error(), "duplicate host g2") {
		t.Errorf("a range's host again: %v", err)
	}

	hf := filepath.Join(e.dir, "hostfile")
	if err := os.WriteFile(hf, []byte("h1 slots=1\nh2:3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hs, origin, err := LoadOrigin(e.opts(Options{Hostfile: hf}))
	if err != nil {
		t.Fatal(err)
	}
	if origin.Kind != FromHostfile || !origin.CommandLine() || len(hs) != 2 || hs[0].Slots != 1 || hs[1].Slots != 3 ||
		hs[0].Port != 2201 || hs[1].Port != 22 || hs[0].Source != hf+":1" {
		t.Errorf("--hostfile: %+v, %+v", origin, hs)
	}
	twice := filepath.Join(e.dir, "twice")
	if err := os.WriteFile(twice, []byte("h[1-2] slots=1\nh2 slots=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(e.opts(Options{Hostfile: twice})); err == nil || err.Error() != twice+":2: duplicate host h2 (first at "+twice+":1)" {
		t.Errorf("a host twice in a hostfile: %v", err)
	}
	for _, o := range []Options{{Hostfile: hf, Flags: []string{"h1"}}, {Hostfile: hf, File: hf}} {
		if _, err := Load(e.opts(o)); err == nil || !strings.HasPrefix(err.Error(), "--hostfile and ") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
