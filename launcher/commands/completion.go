package commands

import (
	"context"
	"embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/probe/inventory"
)

// The shell scripts `tfhive completion SHELL` prints. They hold no list of
// commands or flags: on every Tab they ask `tfhive __complete` (package
// main), so they never go stale when tfhive changes.
//
//go:embed completion/tfhive.bash completion/tfhive.zsh completion/tfhive.fish
var completionScripts embed.FS

// CompletionShells are the shells `tfhive completion` has a script for.
var CompletionShells = []string{"bash", "zsh", "fish"}

// CompletionOptions are `tfhive completion`'s.
type CompletionOptions struct {
	Streams
	Shell string
}

// Completion prints the completion script for a shell.
func Completion(_ context.Context, o CompletionOptions) error {
	fix := "tfhive completion takes one of " + strings.Join(CompletionShells, ", ")
	if o.Shell == "" {
		return &UsageError{Msg: "completion needs a shell", Fix: fix}
	}
	if !slices.Contains(CompletionShells, o.Shell) {
		return &UsageError{Msg: fmt.Sprintf("no completion for shell %q", o.Shell), Fix: fix}
	}
	script, err := completionScripts.ReadFile("completion/tfhive." + o.Shell)
	if err != nil {
		return err
	}
	_, err = o.Stdout.Write(script)
	return err
}

// Candidate is one completion: the word, and a few words saying what it is
// (shown by zsh and fish), without tabs or newlines.
type Candidate struct {
	Word, Desc string
}

// CompleteHosts lists the host names for -H: those of the hosts file
// (--hosts, $TFHIVE_HOSTS, ./hosts.yaml or the per-user one) and the ssh
// config's own Host names (the hosts file's `ssh_config:`, else
// ~/.ssh/config). With fleet, it lists instead the names of the hosts the
// command line chooses (its -H values included), which are what --exclude
// accepts. Nothing is dialled; a file that does not load gives no names.
func CompleteHosts(h HostOptions, fleet bool) []Candidate {
	o := hostsOptions(HostOptions{File: h.File, SSHConfig: h.SSHConfig})
	var out []Candidate
	seen := map[string]bool{}
	add := func(name, desc string) {
		if !seen[name] && safeWord(name) {
			seen[name] = true
			out = append(out, Candidate{name, desc})
		}
	}
	if fleet {
		o.Flags, o.Hostfile = h.Hosts, h.Hostfile
	}
	list, origin, _ := hosts.LoadOrigin(o)
	if origin.SSHConfig != "" {
		o.SSHConfig = origin.SSHConfig // the hosts file's ssh_config:
	}
	for _, host := range list {
		if !host.Local || fleet {
			add(host.Name, sourceOf(host))
		}
	}
	if !fleet {
		for _, name := range hosts.SSHConfigAliases(o) {
			add(name, "host in the ssh config")
		}
	}
	return out
}

// sourceOf says where a host comes from in a few words.
func sourceOf(h inventory.Host) string {
	switch {
	case h.Local:
		return "this machine, without SSH"
	case strings.HasPrefix(h.Source, "-H "):
		return "host given with -H"
	}
	file := h.Source
	if i := strings.LastIndexByte(file, ':'); i > 0 {
		file = file[:i] // the line number
	}
	return "host in " + filepath.Base(file)
}

// completeBudget bounds what completing a run id costs the shell waiting
// on a Tab: dialling and probing the hosts for their claims (as `ps`)
// must fit in it. What has not answered by then is left out.
const completeBudget = 2 * time.Second

// CompleteRuns lists run ids: those holding claims on the hosts the
// command line chooses (a claims-only probe, as `tfhive ps`, within
// completeBudget), and those whose log dir is in ./tfhive-runs, the
// default log root: the runs started from here, known without a probe, so
// a host that does not answer still leaves them. With ended, runs whose
// log dir holds a summary are listed too; `kill` leaves them out, as
// there is nothing left to stop.
func CompleteRuns(ctx context.Context, h HostOptions, ended bool) []Candidate {
	byID := map[string]string{}
	if entries, err := os.ReadDir(rundir.Root); err == nil {
		for _, e := range entries {
			id := e.Name()
			if !e.IsDir() || !claim.ValidRunID(id) {
				continue
			}
			desc := "log in " + rundir.Path(id)
			if _, err := os.Stat(filepath.Join(rundir.Root, id, rundir.Summary)); err == nil {
				if !ended {
					continue
				}
				desc = "ended, " + desc
			}
			byID[id] = desc
		}
	}
	holders := map[string][]string{}
	for _, r := range liveRuns(ctx, h) {
		if claim.ValidRunID(r.RunID) {
			holders[r.RunID] = append(holders[r.RunID], printable(hostops.OrUnknown(r.User)+" on "+r.Host))
		}
	}
	for id, who := range holders {
		slices.Sort(who)
		byID[id] = "running: " + strings.Join(slices.Compact(who), ", ")
	}
	var out []Candidate
	for id, desc := range byID {
		out = append(out, Candidate{id, desc})
	}
	slices.SortFunc(out, func(a, b Candidate) int { return strings.Compare(a.Word, b.Word) })
	return out
}

// liveRuns probes the hosts' claims within completeBudget. A Tab must
// not change anything: new host keys are never trusted, and nothing is
// printed (warnings would land in the middle of the user's command line).
func liveRuns(ctx context.Context, h HostOptions) []view.RunOnHost {
	h.AcceptNewHostKeys = false
	if h.ConnectTimeout <= 0 || h.ConnectTimeout > completeBudget {
		h.ConnectTimeout = completeBudget
	}
	if h.CommandTimeout <= 0 || h.CommandTimeout > completeBudget {
		h.CommandTimeout = completeBudget
	}
	if h.Parallel < 1 {
		h.Parallel = 64
	}
	fleet, err := openFleet(h, io.Discard, probeClaims)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, completeBudget)
	defer cancel()
	done := make(chan []view.RunOnHost, 1)
	go func() {
		defer fleet.Close()
		done <- hostops.Runs(fleet.Probe(ctx))
	}()
	// The probe ends at the deadline; should a host hold it up anyway,
	// the shell still gets its answer a moment later.
	timer := time.NewTimer(completeBudget + 250*time.Millisecond)
	defer timer.Stop()
	select {
	case runs := <-done:
		return runs
	case <-timer.C:
		return nil
	}
}

// safeWord is a word a shell can take as one completion unquoted: what
// host names and run ids are made of.
func safeWord(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@:[]") == ""
}

// printable keeps a description on its one line.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
