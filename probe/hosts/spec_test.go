package hosts

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseHostSpec(t *testing.T) {
	tests := []struct {
		in   string
		want hostSpec
		err  string // exact message; "" means success
	}{
		// Good.
		{in: "gpu01", want: hostSpec{Host: "gpu01"}},
		{in: "  gpu01  ", want: hostSpec{Host: "gpu01"}},
		{in: "alice@gpu01", want: hostSpec{User: "alice", Host: "gpu01"}},
		{in: "gpu01:2222", want: hostSpec{Host: "gpu01", Port: 2222}},
		{in: "alice@gpu01.lab.example:22", want: hostSpec{User: "alice", Host: "gpu01.lab.example", Port: 22}},
		{in: "a.b-c_d@10.0.0.7:65535", want: hostSpec{User: "a.b-c_d", Host: "10.0.0.7", Port: 65535}},
		{in: "machine$@h:1", want: hostSpec{User: "machine$", Host: "h", Port: 1}}, // Samba machine accounts
		{in: "[::1]:2222", want: hostSpec{Host: "::1", Port: 2222}},
		{in: "bob@[::1]:2222", want: hostSpec{User: "bob", Host: "::1", Port: 2222}},
		{in: "[::1]", want: hostSpec{Host: "::1"}},
		{in: "[gpu01]:2200", want: hostSpec{Host: "gpu01", Port: 2200}},
		{in: "::1", want: hostSpec{Host: "::1"}},
		{in: "fe80::1:2", want: hostSpec{Host: "fe80::1:2"}}, // bare IPv6: no port, ever
		{in: "bob@2001:db8::7", want: hostSpec{User: "bob", Host: "2001:db8::7"}},
		{in: "_x", want: hostSpec{Host: "_x"}},

		// Empty.
		{in: "", err: `empty host`},
		{in: "   ", err: `empty host`},

		// Ports.
		{in: "gpu01:0", err: `host "gpu01:0": bad port "0" (want 1-65535)`},
		{in: "gpu01:65536", err: `host "gpu01:65536": bad port "65536" (want 1-65535)`},
		{in: "gpu01:abc", err: `host "gpu01:abc": bad port "abc" (want 1-65535)`},
		{in: "gpu01:", err: `host "gpu01:": bad port "" (want 1-65535)`},
		{in: "gpu01:-1", err: `host "gpu01:-1": bad port "-1" (want 1-65535)`},
		{in: "gpu01: 22", err: `host "gpu01: 22": bad port " 22" (want 1-65535)`},
		{in: "[::1]:0", err: `host "[::1]:0": bad port "0" (want 1-65535)`},
		{in: "[::1]:99999", err: `host "[::1]:99999": bad port "99999" (want 1-65535)`},
		{in: "[::1", err: `host "[::1": missing ]`},
		{in: "[::1]2222", err: `host "[::1]2222": expected :port after ]`},
		{in: "[]:22", err: `host "[]:22": "" is not a host name or IP address`},

		// Users.
		{in: "@gpu01", err: `host "@gpu01": bad user name ""`},
		{in: "-oProxyCommand=x@gpu01", err: `host "-oProxyCommand=x@gpu01": bad user name "-oProxyCommand=x"`},
		{in: "a b@gpu01", err: `host "a b@gpu01": bad user name "a b"`},
		{in: "a;b@gpu01", err: `host "a;b@gpu01": bad user name "a;b"`},
		{in: "$(id)@gpu01", err: `host "$(id)@gpu01": bad user name "$(id)"`},
		{in: "a@b@gpu01", err: `host "a@b@gpu01": bad user name "a@b"`},
		{in: "a$b@gpu01", err: `host "a$b@gpu01": bad user name "a$b"`},

		// Host names: shell metacharacters, spaces, option-looking names.
		{in: "a;b", err: `host "a;b": "a;b" is not a host name or IP address`},
		{in: "$(x)", err: `host "$(x)": "$(x)" is not a host name or IP address`},
		{in: "`x`", err: "host \"`x`\": \"`x`\" is not a host name or IP address"},
		{in: "gpu 01", err: `host "gpu 01": "gpu 01" is not a host name or IP address`},
		{in: "gpu01|x", err: `host "gpu01|x": "gpu01|x" is not a host name or IP address`},
		{in: "-oProxyCommand=x", err: `host "-oProxyCommand=x": "-oProxyCommand=x" is not a host name or IP address`},
		{in: "gpu01.", err: `host "gpu01.": "gpu01." is not a host name or IP address`},
		{in: "alice@", err: `host "alice@": "" is not a host name or IP address`},
		{in: ":22", err: `host ":22": "" is not a host name or IP address`},
		{in: "[a;b]:22", err: `host "[a;b]:22": "a;b" is not a host name or IP address`},
		{in: "fe80::1%eth0", err: `host "fe80::1%eth0": "fe80::1%eth0" is not a host name or IP address`},
		{in: "gpu01:22:33:zz", err: `host "gpu01:22:33:zz": "gpu01:22:33:zz" is not a host name or IP address`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseHostSpec(tt.in)
			if tt.err != "" {
				if err == nil {
					t.Fatalf("parseHostSpec(%q) = %+v, want error %q", tt.in, got, tt.err)
				}
				if err.Error() != tt.err {
					t.Errorf("parseHostSpec(%q) error\n got: %s\nwant: %s", tt.in, err, tt.err)
				}
				checkConfigError(t, err)
				return
			}
			if err != nil {
				t.Fatalf("parseHostSpec(%q): unexpected error %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("parseHostSpec(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestSplitHostFlags(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"nil", nil, nil},
		{"one", []string{"gpu01"}, []string{"gpu01"}},
		{"repeated flag", []string{"gpu01", "gpu02"}, []string{"gpu01", "gpu02"}},
		{"comma list", []string{"gpu01,gpu02,bob@gpu03:2222"}, []string{"gpu01", "gpu02", "bob@gpu03:2222"}},
		{"mixed", []string{"a,b", "c"}, []string{"a", "b", "c"}},
		{"spaces trimmed", []string{" a , b ", "  c"}, []string{"a", "b", "c"}},
		{"empties dropped", []string{",a,,b,", "", " , "}, []string{"a", "b"}},
		{"only empties", []string{",", " "}, nil},
		{"ipv6 kept whole", []string{"[::1]:2222,::1"}, []string{"[::1]:2222", "::1"}},
		{"order kept, duplicates kept", []string{"b,a", "b"}, []string{"b", "a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splitHostFlags(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("splitHostFlags(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// checkConfigError asserts that err is a one-line *ConfigError, which main
// maps to exit status 2 (main_test.go's TestExitCodes).
func checkConfigError(t *testing.T, err error) {
	t.Helper()
	ce, ok := err.(*ConfigError)
	if !ok {
		t.Fatalf("error %v is a %T, want *ConfigError", err, err)
	}
	for _, s := range []string{ce.Error(), ce.Hint()} {
		if strings.ContainsAny(s, "\r\n") {
			t.Errorf("error or hint is not one line: %q", s)
		}
	}
}
