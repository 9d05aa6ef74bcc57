package sweep

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
)

func TestParseParam(t *testing.T) {
	p, err := ParseParam("lr=0.1,0.01,1e-3")
	if err != nil || p.Name != "lr" || !reflect.DeepEqual(p.Values, []string{"0.1", "0.01", "1e-3"}) {
		t.Fatalf("got %+v, %v", p, err)
	}
	for _, bad := range []string{"lr", "=1,2", "1x=1", "lr=", "lr=1,,2", "lr=1,1", "PATH=1", "TFHIVE_X=1", "LD_PRELOAD=x", "a-b=1", "lr=a\nb"} {
		if _, err := ParseParam(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseParam("n=" + strings.Repeat("1,", MaxValues) + "1"); err == nil {
		t.Error("too many values accepted")
	}
}

func TestValidate(t *testing.T) {
	a := record.SweepParam{Name: "a", Values: []string{"1", "2"}}
	if err := Validate(nil); err == nil {
		t.Error("no params accepted")
	}
	if err := Validate([]record.SweepParam{a, a}); err == nil {
		t.Error("a name twice accepted")
	}
	big := record.SweepParam{Name: "b", Values: make([]string, 200)}
	c := record.SweepParam{Name: "c", Values: make([]string, 200)}
	if err := Validate([]record.SweepParam{big, c}); err == nil || !strings.Contains(err.Error(), "--random") {
		t.Errorf("a 40000-trial grid: %v", err)
	}
}

func TestGridOrderAndTrials(t *testing.T) {
	s := record.Sweep{Name: "sw", Params: []record.SweepParam{
		{Name: "lr", Values: []string{"0.1", "0.01"}},
		{Name: "bs", Values: []string{"32", "64", "128"}},
	}}
	got := Trials(s)
	if len(got) != 6 || got[0].ID != "sw-001" || got[5].ID != "sw-006" {
		t.Fatalf("trials %+v", got)
	}
	want := []string{"0.1/32", "0.1/64", "0.1/128", "0.01/32", "0.01/64", "0.01/128"}
	for i, tr := range got {
		if g := tr.Params["lr"] + "/" + tr.Params["bs"]; g != want[i] {
			t.Errorf("trial %d = %s, want %s", i, g, want[i])
		}
	}
}

func TestRandomIsSeededAndDistinct(t *testing.T) {
	ps := []record.SweepParam{{Name: "a", Values: []string{"1", "2", "3", "4"}}, {Name: "b", Values: []string{"x", "y", "z"}}}
	one, two := Random(ps, 5, 7), Random(ps, 5, 7)
	if !reflect.DeepEqual(one, two) {
		t.Fatal("the same seed picked different trials")
	}
	if reflect.DeepEqual(one, Random(ps, 5, 8)) && reflect.DeepEqual(one, Random(ps, 5, 9)) {
		t.Error("three seeds picked the same trials")
	}
	seen := map[string]bool{}
	for _, c := range one {
		k := c["a"] + c["b"]
		if seen[k] {
			t.Errorf("%s picked twice", k)
		}
		seen[k] = true
	}
	if len(one) != 5 || len(Random(ps, 50, 1)) != 12 {
		t.Error("wrong counts")
	}
}

func TestCommandAndEnv(t *testing.T) {
	tr := record.SweepTrial{ID: "sw-002", Params: map[string]string{"lr": "0.1", "l": "x"}}
	got := Command([]string{"python3", "train.py", "--lr={lr}", "{l}{lr}", "${HOME}", "{other}"}, tr.Params)
	want := []string{"python3", "train.py", "--lr=0.1", "x0.1", "${HOME}", "{other}"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Command = %q", got)
	}
	if env := Env(tr); !reflect.DeepEqual(env, []string{"l=x", "lr=0.1", "TFHIVE_TRIAL=sw-002"}) {
		t.Errorf("Env = %q", env)
	}
	if u := Unused([]string{"t.py", "--lr={lr}"}, []record.SweepParam{{Name: "lr"}, {Name: "bs"}}); !reflect.DeepEqual(u, []string{"bs"}) {
		t.Errorf("Unused = %q", u)
	}
}
