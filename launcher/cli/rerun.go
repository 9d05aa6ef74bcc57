package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/tfhive/tfhive/launcher/commands"
)

// rerunFlags are what a rerun may set again: how the new run is named,
// kept and shown. What runs is the record's; a flag of run's that would
// change it is refused as unknown.
func rerunFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "name", Usage: "the new run's `ID` (default: time-based and unique)"},
		&cli.StringFlag{Name: "log-dir", Usage: "the new run's log `DIR` (default tfhive-runs/RUN_ID)"},
		&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "detach, or with --detach=false do not, whatever the run did"},
		&cli.DurationFlag{Name: "wait", Usage: "wait up to `D` for enough GPUs instead of the run's --wait"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "show only tfhive's own lines and the summary"},
		&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON on stdout (task output goes to stderr)"},
		&cli.BoolFlag{Name: "trust", Usage: "run a record someone else wrote (its repro.json or log dir not yours): its command, hosts and setup run as you"},
		notifyFlag(""),
		colorFlag(),
	}
}

func (w wiring) rerun(c *cli.Context) (commands.RerunOptions, error) {
	o := commands.RerunOptions{Streams: w.streams(c), Run: c.Args().First(), Name: c.String("name"),
		LogDir: c.String("log-dir"), Quiet: c.Bool("quiet"), JSON: c.Bool("json"), Trust: c.Bool("trust"), Signals: w.sigs,
		Notify: notifyValues(c)}
	if c.IsSet("detach") {
		d := c.Bool("detach")
		o.Detach = &d
	}
	if c.IsSet("wait") {
		d := c.Duration("wait")
		if d < 0 {
			return o, &commands.UsageError{Msg: "--wait must not be negative"}
		}
		o.Wait = &d
	}
	if c.NArg() != 1 {
		return o, &commands.UsageError{Msg: fmt.Sprintf("rerun takes one run: its id, or its log dir (got %d arguments)", c.NArg()),
			Fix: "tfhive runs lists this directory's runs"}
	}
	return o, nil
}
