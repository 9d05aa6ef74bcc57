package slurmrun

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/emit/slurmtest"
	"github.com/tfhive/tfhive/probe/remote"
)

var update = flag.Bool("update", false, "capture testdata/sinfo.txt and squeue.txt from a one-machine Slurm (root)")

// TestCaptureGolden (with -update) runs status.sh and queue.sh on a real
// one-machine Slurm, a job running and two pending, and keeps what they
// print as the parsers' golden files.
func TestCaptureGolden(t *testing.T) {
	if !*update {
		t.Skip("-update captures the golden files")
	}
	c := slurmtest.Start(t, 2, 2, 2)
	t.Setenv("SLURM_CONF", c.Conf)
	sh := func(s string) {
		out, err := c.Command("sh", "-c", s).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", s, err, out)
		}
	}
	sh("sbatch --gpus-per-node=1 --output=/dev/null --wrap 'sleep 60'")
	sh("sbatch --nodes=2 --gpus-per-node=2 --job-name='a|b' --output=/dev/null --wrap 'sleep 60'")
	sh("sbatch --nodes=2 --gpus-per-node=2 --output=/dev/null --wrap 'sleep 60'")
	c.Command("sh", "-c", "until squeue --noheader --states=RUNNING | grep -q .; do sleep 0.1; done").Run()
	for name, s := range map[string]string{"sinfo.txt": statusSh.With(setPartition("")), "squeue.txt": queueSh.With(setPartition(""))} {
		var out strings.Builder
		if rc, err := (remote.Local{}).Run(context.Background(), "sh -s", strings.NewReader(s), &out, os.Stderr); rc != 0 || err != nil {
			t.Fatalf("%s: %d %v", name, rc, err)
		}
		if err := os.WriteFile("testdata/"+name, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh("scancel --user=root")
}
