package hosts

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tfhive/tfhive/probe/internal/testfs"
)

func TestSSHConfigAliases(t *testing.T) {
	e := newLoadEnv(t, "")
	inc := filepath.Join(e.dir, "more.conf")
	testfs.WriteFile(t, e.dir, "more.conf", "Host gpu03 gpu01\n  HostName 10.0.0.3\n")
	// The FIFO is refused unopened, as by Load.
	testfs.WriteFile(t, e.home, ".ssh/config", "# fleet\nHost gpu01 gpu02 # the first two\n  User me\nHost *.lab !bad gpu0?\nhost=\"quoted\"\nMatch host x\nInclude "+inc+" /nonexistent/*.conf\nInclude "+testfs.FIFO(t)+"\n")
	got := SSHConfigAliases(e.opts(Options{}))
	if want := []string{"gpu01", "gpu02", "quoted", "gpu03"}; !reflect.DeepEqual(got, want) {
		t.Errorf("aliases %q, want %q", got, want)
	}
	// --ssh-config wins; a file that cannot be read lists nothing.
	if got := SSHConfigAliases(e.opts(Options{SSHConfig: inc})); !reflect.DeepEqual(got, []string{"gpu03", "gpu01"}) {
		t.Errorf("--ssh-config: %q", got)
	}
	if got := SSHConfigAliases(e.opts(Options{SSHConfig: filepath.Join(e.dir, "none")})); got != nil {
		t.Errorf("missing file: %q", got)
	}
}
