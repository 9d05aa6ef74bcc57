package schedule

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseExclude(t *testing.T) {
	tests := []struct {
		specs   []string
		want    Exclusions
		wantErr string
	}{
		{[]string{"gpu01"}, Exclusions{"gpu01": {}}, ""},
		{[]string{"gpu01:0,1"}, Exclusions{"gpu01": {0, 1}}, ""},
		{[]string{"gpu01:0,1,gpu02"}, Exclusions{"gpu01": {0, 1}, "gpu02": {}}, ""},
		{[]string{"gpu01:3", "gpu01:1,2"}, Exclusions{"gpu01": {1, 2, 3}}, ""},
		{[]string{"gpu01:0-3,6"}, Exclusions{"gpu01": {0, 1, 2, 3, 6}}, ""},
		{[]string{"gpu01:1", "gpu01"}, Exclusions{"gpu01": {}}, ""},
		{[]string{"gpu01", "gpu01:1"}, Exclusions{"gpu01": {}}, ""},
		{[]string{"gpu01:1,1"}, Exclusions{"gpu01": {1}}, ""},
		{[]string{"10.0.0.1:2,gpu02:0"}, Exclusions{"10.0.0.1": {2}, "gpu02": {0}}, ""},
		{[]string{"[fd00::1]:0,1"}, Exclusions{"fd00::1": {0, 1}}, ""},
		{[]string{"fd00::1"}, Exclusions{"fd00::1": {}}, ""},
		{[]string{" a , b:1 "}, Exclusions{"a": {}, "b": {1}}, ""},
		{nil, Exclusions{}, ""},
		{[]string{"gpu01,3"}, nil, `bad --exclude "gpu01,3": GPU index 3 has no host: before it`},
		{[]string{"3"}, nil, "GPU index 3 has no host: before it"},
		{[]string{"gpu01:"}, nil, `bad --exclude "gpu01:"`},
		{[]string{":1"}, nil, `bad --exclude ":1"`},
		{[]string{"gpu01:x"}, nil, `bad GPU index "x"`},
		{[]string{"gpu01:3-1"}, nil, `bad GPU index "3-1"`},
		{[]string{"gpu01:-1"}, nil, `bad GPU index "-1"`},
		{[]string{"a,,b"}, nil, "empty item"},
		{[]string{""}, nil, "empty item"},
		{[]string{"[fd00::1"}, nil, "missing ]"},
		{[]string{"[fd00::1]x"}, nil, "unexpected"},
	}
	for _, tt := range tests {
		got, err := ParseExclude(tt.specs, nil)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseExclude(%q) err = %v, want %q", tt.specs, err, tt.wantErr)
			} else if _, ok := err.(*UsageError); !ok {
				t.Errorf("ParseExclude(%q): not a usage error", tt.specs)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseExclude(%q) = %v, %v; want %v", tt.specs, got, err, tt.want)
		}
	}
}

// A host named with its port (two sshds on one address) is read by its
// name, whole or with GPU indices; other hosts as ever.
func TestParseExcludeNamesWithPorts(t *testing.T) {
	hosts := []string{"10.0.0.5:2222", "10.0.0.5:2223", "[fd00::1]:2222", "gpu01"}
	for _, tt := range []struct {
		specs []string
		want  Exclusions
	}{
		{[]string{"10.0.0.5:2222"}, Exclusions{"10.0.0.5:2222": {}}},
		{[]string{"10.0.0.5:2223:0,1"}, Exclusions{"10.0.0.5:2223": {0, 1}}},
		{[]string{"10.0.0.5:2222:1,10.0.0.5:2223"}, Exclusions{"10.0.0.5:2222": {1}, "10.0.0.5:2223": {}}},
		{[]string{"[fd00::1]:2222:0-1"}, Exclusions{"[fd00::1]:2222": {0, 1}}},
		{[]string{"[fd00::1]:2222"}, Exclusions{"[fd00::1]:2222": {}}},
		{[]string{"gpu01:1,gpu01"}, Exclusions{"gpu01": {}}},
		// Not a host's name: read as ever (and then unknown to Validate).
		{[]string{"10.0.0.5:7"}, Exclusions{"10.0.0.5": {7}}},
	} {
		got, err := ParseExclude(tt.specs, hosts)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseExclude(%q) = %v, %v; want %v", tt.specs, got, err, tt.want)
		}
	}
}

func TestExclusionsValidate(t *testing.T) {
	e := Exclusions{"b": nil, "zz": {1}, "a": {0}}
	err := e.Validate([]string{"a", "b", "c"})
	if err == nil || err.Error() != "--exclude zz: unknown host" || err.(*UsageError).Hint() != "known hosts: a, b, c" {
		t.Errorf("got %v", err)
	}
	if err := e.Validate([]string{"a", "b", "zz"}); err != nil {
		t.Errorf("got %v", err)
	}
	if !e.Whole("b") || e.Whole("a") || e.Whole("c") || !e.Has("b", 5) || !e.Has("a", 0) || e.Has("a", 1) || e.Has("c", 0) {
		t.Error("Whole/Has disagree with the map")
	}
}
