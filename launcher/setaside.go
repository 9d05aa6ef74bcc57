package launcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/wording"
	"golang.org/x/sync/errgroup"
)

// A sweep's trial run again must not lose what its earlier attempt left
// on the hosts: a run's fresh start empties the run directory of a
// reused id (mux.sh). SetAside renames that directory RUN.N first
// (scripts/set-aside.sh), where tfhive logs -H reads it as a run of that
// id and tfhive gc removes it once old.

// Aside is what one host did with a run's directory (SetAside).
type Aside struct {
	Host string
	// Moved is the run id the directory has now (RUN.N); "" when
	// nothing moved.
	Moved string
	// Running names a task of the run whose supervisor still lives
	// there: nothing moved.
	Running string
	// None says why there was nothing to move: no such directory, or
	// one that is not the user's own.
	None string
	Err  error // the host could not be asked, or the rename failed
}

var setAsideSh = shscript.Load(scripts, "scripts/rundir.sh", "scripts/set-aside.sh")

// SetAside asks every host, in parallel and bounded, to move run id's
// directory aside; one answer per host, in host order.
func SetAside(ctx context.Context, execs map[string]remote.Executor, id string, parallel int) []Aside {
	names := slices.Sorted(func(yield func(string) bool) {
		for h := range execs {
			if !yield(h) {
				return
			}
		}
	})
	s := setAsideSh.With(shscript.Set("tfhive_run", id))
	input := strconv.Itoa(len(s)) + "\n" + s
	out := make([]Aside, len(names))
	var g errgroup.Group
	g.SetLimit(max(parallel, 1))
	var mu sync.Mutex
	for i, h := range names {
		g.Go(func() error {
			rc, stdout, stderr, err := remote.RunBounded(ctx, execs[h], supervisor.Command, strings.NewReader(input), maxRunAnswer, maxRunStderr)
			a := parseAside(h, string(stdout))
			switch {
			case errors.Is(err, remote.ErrTooMuchOutput):
				a = Aside{Host: h}
				err = fmt.Errorf("%w: whether its directory moved aside is unknown", err)
			case err == nil && rc != 0:
				err = fmt.Errorf("exit %d: %s", rc, wording.FirstLine(string(stderr)))
			}
			if err != nil {
				a.Err = err
			}
			mu.Lock()
			out[i] = a
			mu.Unlock()
			return nil
		})
	}
	g.Wait()
	return out
}

func parseAside(host, out string) Aside {
	a := Aside{Host: host}
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "@@tfhive-aside ")
		if !ok {
			continue
		}
		word, what, _ := strings.Cut(rest, " ")
		switch word {
		case "moved":
			a.Moved = what
		case "running":
			a.Running = what
		case "none":
			a.None = what
		case "failed":
			a.Err = fmt.Errorf("cannot move its directory aside: %s", what)
		}
		return a
	}
	a.Err = fmt.Errorf("no answer about moving the run's directory aside")
	return a
}
