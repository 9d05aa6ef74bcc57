package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/notify"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/probe/remote"
)

// notifyTargets are a run's --notify targets, checked before anything
// touches a host; with none given, the hosts file's notify:, checked
// with its line. --notify none: none at all.
//
// A hosts file that someone other than the user or root may have written
// (a lab's shared one, named with --hosts or $TFHIVE_HOSTS) gives no
// command: it would run as the user, here. Each is skipped with a
// warning on stderr; its webhooks stand (they tell a run's events, which
// whoever may write the file and choose its hosts sees anyway).
func notifyTargets(flags []string, h HostOptions, stderr io.Writer) ([]notify.Target, error) {
	if len(flags) > 0 {
		t, err := notify.ParseTargets(flags)
		if err != nil {
			return nil, &UsageError{Msg: err.Error()}
		}
		return t, nil
	}
	_, origin, err := hosts.LoadOrigin(hostsOptions(h))
	if err != nil || len(origin.Notify) == 0 {
		// The fleet says what is wrong with the hosts file.
		return nil, nil
	}
	list := origin.Notify
	if origin.NotifyShared != "" {
		list = nil
		for _, s := range origin.Notify {
			if shown, ok := notify.IsCommand(s); ok {
				fmt.Fprintf(stderr, "tfhive: warning: %s: notify: command %s not run: the hosts file may be written by others (%s), and it would run as you; give it with --notify, or keep the file yours and writable by you only\n",
					origin.NotifyFrom, shown, origin.NotifyShared)
				continue
			}
			list = append(list, s)
		}
		if len(list) == 0 {
			return nil, nil
		}
	}
	t, err := notify.ParseTargets(list)
	if err != nil {
		return nil, &UsageError{Msg: origin.NotifyFrom + ": notify: " + strings.TrimPrefix(err.Error(), "--notify ")}
	}
	return t, nil
}

// newNotifier is the notifier of run id, whose log dir is logDir; nil
// without targets. Its warnings go to stderr (a keeper's: keeper.log).
func newNotifier(targets []notify.Target, id, logDir string, stderr io.Writer) *notify.Notifier {
	if len(targets) == 0 {
		return nil
	}
	machine, _ := os.Hostname()
	if abs, err := filepath.Abs(logDir); err == nil {
		logDir = abs
	}
	return &notify.Notifier{Targets: targets, Base: notify.Event{Run: id, User: hostops.LocalUser(), Machine: machine, LogDir: logDir},
		Warn: func(line string) { fmt.Fprintf(stderr, "tfhive: warning: %s\n", line) }}
}

// onEvent is n's subscriber to the run's timeline; nil without targets.
func onEvent(n *notify.Notifier) func(task, host, event, detail string) {
	if !n.Active() {
		return nil
	}
	return n.Row
}

// tellEnd tells the run's end (its summary's, or, when nothing started,
// why not) once the rows being sent are: for a kept run (kept), after
// claiming the telling on its hosts (launcher.ClaimEndNotice), so that
// an attach -H of the ended run does not tell it again. A keeper that
// stepped down tells nothing: the one that adopted the run will.
func tellEnd(ctx context.Context, n *notify.Notifier, sum *record.Summary, err error, kept bool,
	execs map[string]remote.Executor) {
	if !n.Active() {
		return
	}
	result, code, detail := endOf(ctx, sum, err)
	if notify.EndKind(result) == "" {
		return
	}
	n.Wait()
	if kept && sum != nil {
		var hostList []string
		for _, t := range sum.Tasks {
			if !slices.Contains(hostList, t.Host) {
				hostList = append(hostList, t.Host)
			}
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notify.Timeout)
		first := launcher.ClaimEndNotice(cctx, execs, hostList, sum.RunID)
		cancel()
		if !first {
			return
		}
	}
	n.End(ctx, result, code, detail)
}

// endOf is how the run ended, as a notification says it: the summary's
// result, exit code and reason; a run that never started failed (or was
// interrupted while it waited), with the error as its detail.
func endOf(ctx context.Context, sum *record.Summary, err error) (result string, code int, detail string) {
	if sum != nil {
		return sum.Result, sum.ExitCode, sum.Reason
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return record.ResultInterrupted, 130, "before it started"
	}
	code = 1
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	if err != nil {
		detail = "it did not start: " + err.Error()
	}
	return record.ResultFailed, code, detail
}

// fleetExecs are the fleet's connections, by host name.
func fleetExecs(fleet *probe.Fleet) map[string]remote.Executor {
	m := map[string]remote.Executor{}
	for i, h := range fleet.Hosts {
		if x := fleet.Executor(i); x != nil {
			m[h.Name] = x
		}
	}
	return m
}
