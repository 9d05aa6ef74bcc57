package launcher

import (
	"context"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// A kept run's end is told once (--notify): whoever carries it to its
// end, its keeper or an attach -H after the keeper was gone, first claims
// the telling in the run's directory on one of its hosts
// (scripts/end-notice.sh); a second attach -H of the ended run finds it
// claimed. The run's directory is the user's own and 0700 (rundir.sh):
// no other user can have claimed it for them.

var endNoticeSh = shscript.Load(scripts, "scripts/rundir.sh", "scripts/end-notice.sh")

// ClaimEndNotice asks hosts, in order, until one answers for the run:
// true when this tfhive is the first to tell run id's end, or when no
// host could remember it (unreachable, or none holds the run's
// directory: better told twice than never); false when another told it.
func ClaimEndNotice(ctx context.Context, execs map[string]remote.Executor, hosts []string, id string) bool {
	s := endNoticeSh.With(shscript.Set("tfhive_run", id))
	input := strconv.Itoa(len(s)) + "\n" + s
	for _, h := range hosts {
		x := execs[h]
		if x == nil {
			continue
		}
		// A host may print without end: it is stopped at the bound (the
		// word comes first; one lost in a flood is no answer), and its
		// stderr is not kept.
		rc, out, _, err := remote.RunBounded(ctx, x, supervisor.Command, strings.NewReader(input), noticeAnswerMax, 0)
		if err != nil || rc != 0 {
			continue
		}
		switch noticeAnswer(string(out)) {
		case "first":
			return true
		case "told":
			return false
		}
	}
	return true
}

// noticeAnswer is end-notice.sh's word: first, told, none; "" for no
// answer.
func noticeAnswer(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "@@tfhive-notice "); ok {
			word, _, _ := strings.Cut(rest, " ")
			return word
		}
	}
	return ""
}

// noticeAnswerMax bounds what is kept of a host's answer to
// end-notice.sh: one line, after what the host's login may print.
const noticeAnswerMax = 64 << 10
