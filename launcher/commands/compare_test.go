package commands

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// compare's refusals, each one line of its kind (no such run: exit 1;
// the others usage, exit 2), and its page where -o says.
func TestCompare(t *testing.T) {
	const root = "../report/testdata/sweeps"
	run := func(o CompareOptions) (string, error) {
		var out bytes.Buffer
		o.Streams = Streams{Stdout: &out, Stderr: &out}
		if o.LogRoot == "" {
			o.LogRoot = root
		}
		err := Compare(context.Background(), o)
		return out.String(), err
	}
	var noRun *NoRunError
	var usage *UsageError
	for _, c := range []struct {
		o    CompareOptions
		want string
		kind any
	}{
		{CompareOptions{Names: []string{"grid-001", "nosuch"}}, "no run or sweep nosuch in " + root + " (tfhive runs lists its runs)", &noRun},
		{CompareOptions{Names: []string{"grid-001", "grid-001"}}, "compare: grid-001 given twice", &usage},
		{CompareOptions{Names: []string{"grid-001"}, Best: "loss up"}, `--best "loss up": "up" is neither min nor max`, &usage},
		{CompareOptions{Names: []string{"grid-001"}, ColorBy: "lr"}, "--color-by names a sweep's parameter: compare SWEEP", &usage},
		{CompareOptions{Names: []string{"grid"}, ColorBy: "bs"}, "--color-by bs: the sweep's parameters are [opt lr]", &usage},
	} {
		_, err := run(c.o)
		if err == nil || err.Error() != c.want || !errors.As(err, c.kind) {
			t.Errorf("%v: %v (%T), want %q", c.o.Names, err, err, c.want)
		}
	}
	out := filepath.Join(t.TempDir(), "c.html")
	stdout, err := run(CompareOptions{Names: []string{"grid"}, ColorBy: "lr", Best: "loss max", Out: out})
	if err != nil || stdout != out+"\n" {
		t.Fatalf("compare grid -o: %q, %v", stdout, err)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<th>best</th><td>grid-003: loss 0.9 (highest)</td>", "<th>colour</th><td>by lr</td>"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page has no %q", want)
		}
	}
}
