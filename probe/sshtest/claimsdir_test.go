package sshtest_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// The claims directory is there before any session, as on a host set up
// for tfhive: the test runner's, sticky and open to all.
func TestClaimsDirMade(t *testing.T) {
	f := sshtest.Start(t, sshtest.Profile{Name: "c", GPU: "idle-2gpu.xml"}, sshtest.Profile{Name: "silent", Silent: true})
	for _, h := range f.Hosts {
		fi, err := os.Stat(h.ClaimsDir())
		if err != nil {
			t.Fatal(err)
		}
		if want := os.ModeDir | os.ModeSticky | 0o777; fi.Mode() != want {
			t.Errorf("%s: claims dir mode %v, want %v", h.Name, fi.Mode(), want)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Geteuid() {
			t.Errorf("%s: claims dir owned by uid %d, want %d", h.Name, uid, os.Geteuid())
		}
	}
}
