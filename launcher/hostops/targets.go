package hostops

import (
	"fmt"
	"os"
	"os/user"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
)

// Targets are the claims of the runs ids (run id, or a sweep's trials)
// on the hosts of inv (fleet's last probe) that the user may stop (Kill),
// with the connections to stop them over: only the user's own runs, or
// any when the user is root. others say whose the claims left alone are
// (another user's). kill and top's stop share it.
func Targets(fleet *probe.Fleet, inv inventory.Inventory, id string, ids map[string]bool) (targets []view.RunOnHost, execs map[string]remote.Executor, others []string) {
	execs = map[string]remote.Executor{}
	for _, r := range Runs(inv) {
		if !ids[r.RunID] {
			continue
		}
		for i, h := range fleet.Hosts {
			if h.Name != r.Host {
				continue
			}
			// Only your own runs; root may stop any. The user is the
			// holding processes' owner as the host's kernel says.
			if user := LoginUser(h); user != r.User && user != "root" {
				others = append(others, fmt.Sprintf("%s holds claims labelled %s on %s", OrUnknown(r.User), id, h.Name))
				continue
			}
			if e := fleet.Executor(i); e != nil {
				execs[h.Name] = e
				targets = append(targets, r)
			}
		}
	}
	return targets, execs, others
}

// LoginUser is who tfhive is on host h: the user it logs in as, or on
// this machine without SSH (no hosts given), the local user.
func LoginUser(h inventory.Host) string {
	if h.Local && h.User == "" {
		return LocalUser()
	}
	return h.User
}

// LocalUser is who runs tfhive here.
func LocalUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// OrUnknown is a claim's user as said: "an unknown user" when the host
// did not say.
func OrUnknown(user string) string {
	if user == "" {
		return "an unknown user"
	}
	return user
}
