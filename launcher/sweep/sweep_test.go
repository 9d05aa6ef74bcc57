package sweep

import (
	"reflect"
	"slices"
	"strconv"
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
	if err := Validate(nil, 0); err == nil {
		t.Error("no params accepted")
	}
	if err := Validate([]record.SweepParam{a, a}, 0); err == nil {
		t.Error("a name twice accepted")
	}
	big := record.SweepParam{Name: "b", Values: make([]string, 200)}
	c := record.SweepParam{Name: "c", Values: make([]string, 200)}
	if err := Validate([]record.SweepParam{big, c}, 0); err == nil || err.Error() != "the grid has 40000 combinations, at most 10000; pick some with --random N" {
		t.Errorf("a 40000-trial grid: %v", err)
	}
	// --random N picks N of a grid of any size, N at most MaxTrials.
	if err := Validate([]record.SweepParam{big, c}, 500); err != nil {
		t.Errorf("--random 500 of a 40000-trial grid: %v", err)
	}
	if err := Validate([]record.SweepParam{big, c}, 20000); err == nil || err.Error() != "--random 20000: at most 10000 trials" {
		t.Errorf("--random 20000 of a 40000-trial grid: %v", err)
	}
	if err := Validate([]record.SweepParam{a}, 20000); err != nil {
		t.Errorf("--random 20000 of a 2-trial grid (all of it): %v", err)
	}
	var huge []record.SweepParam
	for _, n := range "defghij" {
		huge = append(huge, record.SweepParam{Name: string(n), Values: make([]string, 1000)})
	}
	if err := Validate(huge, 5); err == nil || err.Error() != "the grid has more than 2^62 combinations, even for --random" {
		t.Errorf("--random 5 of 1000^7: %v", err)
	}
}

// --random N of a grid larger than MaxTrials picks N distinct
// combinations, the same for the same seed, in grid order, without
// making the grid.
func TestRandomOfALargeGrid(t *testing.T) {
	var ps []record.SweepParam
	for _, n := range []string{"a", "b", "c"} {
		p := record.SweepParam{Name: n}
		for i := range 1000 {
			p.Values = append(p.Values, n+strconv.Itoa(i))
		}
		ps = append(ps, p)
	}
	one := Random(ps, 300, 7)
	if !reflect.DeepEqual(one, Random(ps, 300, 7)) {
		t.Fatal("the same seed picked different trials")
	}
	if reflect.DeepEqual(one, Random(ps, 300, 8)) {
		t.Error("two seeds picked the same trials")
	}
	if len(one) != 300 {
		t.Fatalf("%d trials, want 300", len(one))
	}
	index := func(c map[string]string) int {
		k := 0
		for _, p := range ps {
			k = k*1000 + slices.Index(p.Values, c[p.Name])
		}
		return k
	}
	for i, c := range one {
		if len(c) != 3 || slices.Contains([]int{-1}, index(c)) {
			t.Fatalf("trial %d: %v", i, c)
		}
		if i > 0 && index(c) <= index(one[i-1]) {
			t.Fatalf("trial %d (%v) not after trial %d (%v): not distinct, or not in grid order", i, c, i-1, one[i-1])
		}
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
