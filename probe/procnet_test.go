package probe

import (
	"reflect"
	"testing"
)

func TestGoldenProcNet(t *testing.T) {
	for _, name := range []string{"tcp.txt", "ss-tln.txt", "ss-listening.txt"} {
		checkGolden(t, testdataDir+"/procnet/"+name, parseListeningPorts(readTestdata(t, "procnet/"+name)))
	}
}

// ss prints what /proc/net/tcp{,6} holds, in decimal: the same ports.
func TestParseListeningPortsSS(t *testing.T) {
	want := parseListeningPorts(readTestdata(t, "procnet/tcp.txt"))
	for _, name := range []string{"ss-tln.txt", "ss-listening.txt"} {
		if got := parseListeningPorts(readTestdata(t, "procnet/"+name)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s gives %v, tcp.txt %v", name, got, want)
		}
	}
	for name, tc := range map[string]struct {
		in   string
		want []int
	}{
		"header only":   {"State  Recv-Q Send-Q Local Address:Port Peer Address:Port Process\n", []int{}},
		"wildcard port": {"LISTEN 0 128 0.0.0.0:* 0.0.0.0:*\n", []int{}},
		"not listening": {"ESTAB 0 0 127.0.0.1:22 127.0.0.1:5555\n", []int{}},
		"port too big":  {"LISTEN 0 128 0.0.0.0:65536 0.0.0.0:*\n", []int{}},
		"scoped v6":     {"LISTEN 0 128 [fe80::1%eth0]:7000 [::]:*\n", []int{7000}},
		"no state":      {"Recv-Q Send-Q Local Address:Port Peer Address:Port Process\n0 128 0.0.0.0:2024 0.0.0.0:*\n", []int{2024}},
		"no state, v6":  {"0 4096 [::1]:631 [::]:*\n", []int{631}},
		"not counts":    {"x 128 0.0.0.0:2024 0.0.0.0:*\n0 -1 0.0.0.0:2025 0.0.0.0:*\n", []int{}},
	} {
		if got := parseListeningPorts([]byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %#v, want %#v", name, got, tc.want)
		}
	}
}

func TestParseListeningPorts(t *testing.T) {
	got := parseListeningPorts(readTestdata(t, "procnet/tcp.txt"))
	// 22 listens on IPv4 and IPv6, 29500 also has an ESTABLISHED peer, 53 is
	// on 127.0.0.53, 631 on ::1 and 5432 on a v4-mapped address; the
	// ESTABLISHED 52144 and TIME_WAIT 41234 are clients, not listeners.
	want := []int{22, 53, 631, 5432, 6006, 8888, 29500}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseListeningPorts(tcp.txt) = %v, want %v", got, want)
	}

	for name, tc := range map[string]struct {
		in   string
		want []int
	}{
		"empty":       {"", []int{}},
		"header only": {"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n", []int{}},
		"no trailing newline": {"   0: 00000000:FFFF 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0",
			[]int{65535}},
		"garbage port": {"   0: 00000000:ZZZZ 00000000:0000 0A\n   1: 00000000:10000 00000000:0000 0A\n   2: 00000000 00000000:0000 0A\n", []int{}},
		"port zero":    {"   0: 00000000:0000 00000000:0000 0A\n", []int{}},
		"short lines":  {"0:\n   0: 00000000:0016\n", []int{}},
	} {
		if got := parseListeningPorts([]byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %#v, want %#v", name, got, tc.want)
		}
	}
}
