package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/wording"
)

// KillOptions are `tfhive kill`'s.
type KillOptions struct {
	Streams
	Hosts HostOptions
	RunID string
	Grace time.Duration // SIGTERM → SIGKILL
}

// Kill stops a run's tasks on every host where it holds claims: only the
// user's own runs, or any when the user is root.
func Kill(ctx context.Context, o KillOptions) error {
	if o.Grace < 0 {
		return usagef("--grace must not be negative")
	}
	if err := checkRunID("", o.RunID); err != nil {
		return err
	}
	// A sweep of this log root: its tfhive is asked to start no more
	// trials, and every trial's tasks are stopped.
	ids := map[string]bool{o.RunID: true}
	sweepDir := filepath.Join(logRoot, o.RunID)
	rec, isSweep, err := readSweep(sweepDir)
	if err != nil {
		return err
	}
	if isSweep {
		for _, t := range rec.Trials {
			ids[t.ID] = true
		}
		if runGoesOn(sweepDir) {
			f, err := launcher.OpenLogFile(filepath.Join(sweepDir, sweepStop), os.O_CREATE|os.O_WRONLY)
			if err != nil {
				return fmt.Errorf("log dir: %w", err)
			}
			f.Close()
			fmt.Fprintf(o.Stdout, "tfhive: sweep %s: its tfhive starts no more trials\n", o.RunID)
		}
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeClaims)
	if err != nil {
		return err
	}
	defer fleet.Close()
	inv, err := probeAll(ctx, fleet)
	if err != nil {
		return err
	}
	var targets []view.RunOnHost
	var others []string
	execs := map[string]remote.Executor{}
	for _, r := range hostops.Runs(inv) {
		if !ids[r.RunID] {
			continue
		}
		for i, h := range fleet.Hosts {
			if h.Name != r.Host {
				continue
			}
			// Only your own runs; root may stop any. The user is the
			// holding processes' owner as the host's kernel says.
			if h.User != r.User && h.User != "root" {
				others = append(others, fmt.Sprintf("%s holds claims labelled %s on %s", orUnknown(r.User), o.RunID, h.Name))
				continue
			}
			execs[h.Name] = fleet.Executor(i)
			targets = append(targets, r)
		}
	}
	if len(targets) == 0 {
		if isSweep && runGoesOn(sweepDir) {
			// No trial holds GPUs yet (all wait): its tfhive stops them.
			return nil
		}
		if err := unreachable(inv); err != nil {
			return err
		}
		if len(others) > 0 {
			return fmt.Errorf("run %s is not yours to stop: %s; only they or root can stop it", o.RunID, strings.Join(others, "; "))
		}
		if from := hostsFrom(o.Hosts); from != "" {
			return fmt.Errorf("no run %s holds GPUs or ports on these hosts (%s)", o.RunID, from)
		}
		return fmt.Errorf("no run %s holds GPUs or ports on these hosts", o.RunID)
	}
	for _, other := range others {
		fmt.Fprintf(o.Stderr, "tfhive: warning: %s; left alone\n", other)
	}
	var failed []string
	for _, res := range hostops.Kill(ctx, targets, execs, o.Grace, o.Hosts.Parallel) {
		if res.Err != nil {
			failed = append(failed, res.Host+": "+res.Err.Error())
			continue
		}
		if res.Tasks == 0 {
			fmt.Fprintf(o.Stdout, "tfhive: run %s on %s had already ended\n", res.RunID, res.Host)
			continue
		}
		fmt.Fprintf(o.Stdout, "tfhive: stopped run %s on %s (%s)\n", res.RunID, res.Host, wording.Count(res.Tasks, "task"))
	}
	if len(failed) > 0 {
		return errors.New("could not stop run " + o.RunID + " everywhere: " + strings.Join(failed, "; "))
	}
	return unreachable(inv)
}

func orUnknown(user string) string {
	if user == "" {
		return "an unknown user"
	}
	return user
}
