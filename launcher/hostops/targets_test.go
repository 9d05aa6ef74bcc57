package hostops

import (
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

// On this machine without SSH you are the local user (kill's and top's
// "yours"); on a host, whom you log in as.
func TestLoginUser(t *testing.T) {
	if got := LoginUser(inventory.Host{Name: "localhost", Local: true}); got == "" || got != LocalUser() {
		t.Errorf("local host: %q, want %q", got, LocalUser())
	}
	if got := LoginUser(inventory.Host{Name: "gpu01", User: "alice"}); got != "alice" {
		t.Errorf("gpu01: %q", got)
	}
}
