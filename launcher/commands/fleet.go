package commands

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/transport"
	"github.com/tfhive/tfhive/schedule"
)

// probeWhat is what a command needs to learn from each host.
type probeWhat int

const (
	probeGPUs   probeWhat = iota // everything: GPUs, processes, ports, claims
	probeClaims                  // only the claims (ps, kill)
)

// openFleet validates the host options and loads the hosts; nothing is
// dialled yet.
func openFleet(h HostOptions, stderr io.Writer, what probeWhat) (*probe.Fleet, error) {
	hosts, opts, err := fleetOptions(h, stderr, what)
	if err != nil {
		return nil, err
	}
	return probe.NewFleet(hosts, opts), nil
}

// fleetOptions are openFleet's hosts and options: for a fleet, or for
// probe.Shared connections that many fleets share.
func fleetOptions(h HostOptions, stderr io.Writer, what probeWhat) ([]inventory.Host, probe.Options, error) {
	if h.ConnectTimeout <= 0 {
		return nil, probe.Options{}, usagef("--connect-timeout must be positive")
	}
	if h.CommandTimeout <= 0 {
		return nil, probe.Options{}, usagef("--command-timeout must be positive")
	}
	if h.Parallel < 1 {
		return nil, probe.Options{}, usagef("--parallel must be at least 1")
	}
	hosts, err := hosts.Load(hostsOptions(h))
	if err != nil {
		return nil, probe.Options{}, err
	}
	if err := transport.CheckLocalFiles(hosts); err != nil {
		return nil, probe.Options{}, &UsageError{Msg: err.Error(), Fix: "point identity_file (or IdentityFile) at a private key and UserKnownHostsFile at a known_hosts file; /dev/null for none"}
	}
	// Over the progress line, on a terminal.
	lineStart := ""
	if isTerminal(stderr) {
		lineStart = "\r\x1b[K"
	}
	opts := probe.Options{
		SSH: transport.Options{
			ConnectTimeout:    h.ConnectTimeout,
			AcceptNewHostKeys: h.AcceptNewHostKeys,
			AgentSocket:       os.Getenv("SSH_AUTH_SOCK"),
			Warn: func(msg string) {
				fmt.Fprintf(stderr, "%stfhive: warning: %s\n", lineStart, msg)
			},
			// OpenSSH's own line, word for word, as ssh prints it (and
			// ssh -q does not).
			Added: func(line string) {
				if !h.Quiet {
					fmt.Fprintf(stderr, "%s%s\n", lineStart, line)
				}
			},
		},
		CommandTimeout: h.CommandTimeout,
		Parallel:       h.Parallel,
		ClaimsOnly:     what == probeClaims,
		Dial:           h.Dial,
		Coalesce:       h.Coalesce,
	}
	if isTerminal(stderr) && len(hosts) > 1 {
		opts.Progress = func(done, total int) {
			if done < total {
				fmt.Fprintf(stderr, "\rprobing hosts: %d/%d", done, total)
			} else {
				fmt.Fprint(stderr, "\r\x1b[K")
			}
		}
	}
	return hosts, opts, nil
}

// hostsOptions say where h's hosts come from: -H, --hosts, $TFHIVE_HOSTS
// (which the command line gives as --hosts: told apart by its value),
// ./hosts.yaml, then the per-user hosts file.
func hostsOptions(h HostOptions) hosts.Options {
	home, _ := os.UserHomeDir()
	o := hosts.Options{
		Flags:       h.Hosts,
		File:        h.File,
		Hostfile:    h.Hostfile,
		DefaultFile: hosts.DefaultFile,
		UserFile:    hosts.UserFile(home, os.Getenv("XDG_CONFIG_HOME")),
		SSHConfig:   h.SSHConfig,
		Home:        home,
		LocalUser:   hostops.LocalUser(),
	}
	if env := os.Getenv("TFHIVE_HOSTS"); env != "" && o.File == env {
		o.File, o.EnvFile = "", env
	}
	if h.Local {
		o.DefaultFile, o.UserFile = "", ""
	}
	return o
}

// hostsFrom says where h's hosts come from when that is not the command
// line (-H, --hosts), in a line: "hosts from ~/.config/tfhive/hosts.yaml",
// "hosts from ./hosts.yaml", "hosts from $TFHIVE_HOSTS (FILE)", "no hosts
// given: this machine, without SSH"; "" for the command line. Nothing is
// read. The fleet of a directory without hosts.yaml is another than that
// of one with it: status, ps and run say which they use.
func hostsFrom(h HostOptions) string {
	o := hostsOptions(h)
	origin := hosts.Source(o)
	if origin.CommandLine() {
		return ""
	}
	return origin.Note(o.Home)
}

// noteHostsFrom prints hostsFrom on stderr, when there is something to
// say; stdout is left to the output proper (--json stays one document).
func noteHostsFrom(h HostOptions, stderr io.Writer) {
	if from := hostsFrom(h); from != "" {
		fmt.Fprintf(stderr, "tfhive: %s\n", from)
	}
}

// availability validates the options against the hosts.
func (o Availability) availability(hosts []inventory.Host) (schedule.Availability, error) {
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Name
	}
	ex, err := schedule.ParseExclude(o.Exclude, names)
	if err != nil {
		return schedule.Availability{}, err
	}
	if err := ex.Validate(names); err != nil {
		return schedule.Availability{}, err
	}
	a := schedule.Availability{MaxUtilPct: o.MaxUtilPct, MaxMemMiB: o.MaxMemMiB, Exclude: ex}
	if a.MaxUtilPct < 0 || a.MaxUtilPct > 100 {
		return a, usagef("--max-util must be between 0 and 100")
	}
	if a.MaxMemMiB < 0 {
		return a, usagef("--max-mem must not be negative")
	}
	return a, nil
}

func isTerminal(w io.Writer) bool {
	if s, ok := w.(*Stdout); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
