package schedule

import (
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

func TestIdleRules(t *testing.T) {
	pol := &inventory.Policy{File: "/etc/tfhive/policy.yaml", Idle: &inventory.PolicyIdle{Below: 3,
		Warn: inventory.Duration(30 * time.Minute), Stop: inventory.Duration(2 * time.Hour)}}
	warnOnly := &inventory.Policy{File: "p", Idle: &inventory.PolicyIdle{Below: 1, Warn: inventory.Duration(time.Hour)}}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{{Name: "pol", Policy: pol}, {Name: "none"}, {Name: "warn", Policy: warnOnly}}}
	for _, c := range []struct {
		user time.Duration
		host string
		want inventory.IdleRule
		ok   bool
	}{
		{0, "pol", inventory.IdleRule{Below: 3, Warn: 30 * time.Minute, Stop: 2 * time.Hour, By: "the host's idle policy (/etc/tfhive/policy.yaml)"}, true},
		{0, "none", inventory.IdleRule{}, false},
		{0, "warn", inventory.IdleRule{Below: 1, Warn: time.Hour}, true},
		// Stricter than the policy: the user's stop, the policy's warning.
		{time.Hour, "pol", inventory.IdleRule{Below: 3, Warn: 30 * time.Minute, Stop: time.Hour, By: "--idle-stop 1h0m0s"}, true},
		// Looser: the policy's stands.
		{5 * time.Hour, "pol", inventory.IdleRule{Below: 3, Warn: 30 * time.Minute, Stop: 2 * time.Hour, By: "the host's idle policy (/etc/tfhive/policy.yaml)"}, true},
		// Sooner than the policy's warning: warned at half.
		{20 * time.Minute, "pol", inventory.IdleRule{Below: 3, Warn: 10 * time.Minute, Stop: 20 * time.Minute, By: "--idle-stop 20m0s"}, true},
		{4 * time.Second, "none", inventory.IdleRule{Below: DefaultIdleBelow, Warn: 2 * time.Second, Stop: 4 * time.Second, By: "--idle-stop 4s"}, true},
		{2 * time.Hour, "warn", inventory.IdleRule{Below: 1, Warn: time.Hour, Stop: 2 * time.Hour, By: "--idle-stop 2h0m0s"}, true},
	} {
		got, ok := IdleRules(inv, c.user)[c.host]
		if got != c.want || ok != c.ok {
			t.Errorf("--idle-stop %s on %s: %+v %v, want %+v %v", c.user, c.host, got, ok, c.want, c.ok)
		}
	}
	if e := IdleEvery(inventory.IdleRule{Warn: 2 * time.Second, Stop: 4 * time.Second}); e != 500*time.Millisecond {
		t.Errorf("every %s", e)
	}
	if e := IdleEvery(inventory.IdleRule{Warn: 30 * time.Minute, Stop: 2 * time.Hour}); e != time.Minute {
		t.Errorf("every %s", e)
	}
}
