package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/tfhive/tfhive/launcher/emit"
	"github.com/tfhive/tfhive/launcher/help"
)

// TestEmitGuideTable holds the emit guide's table of flags per target
// (`tfhive help emit`) to what --emit does: every flag of `tfhive run` has
// a row, and a target's cell says "refused" exactly when --emit refuses
// the flag there.
func TestEmitGuideTable(t *testing.T) {
	guide, ok := help.Guide("emit")
	if !ok {
		t.Fatal("no guide emit")
	}
	_, section, found := strings.Cut(guide, "## Every flag, on every target\n")
	if !found {
		t.Fatal(`the emit guide has no "Every flag, on every target"`)
	}
	section, _, _ = strings.Cut(section, "\n\n")
	flagRE := regexp.MustCompile("`(--?[A-Za-z][-a-z]*)")
	rows := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `-") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.ReplaceAll(line, `\|`, "/"), "|"), " | ")
		if len(cells) != 4 {
			t.Fatalf("row %q has %d cells, want 4", line, len(cells))
		}
		for _, m := range flagRE.FindAllStringSubmatch(cells[0], -1) {
			rows[strings.TrimLeft(m[1], "-")] = cells[1:]
		}
	}
	app := newApp(nil, wiring{}, new(error))
	var run, plan *cli.Command
	for _, c := range app.Commands {
		switch c.Name {
		case "run":
			run = c
		case "plan":
			plan = c
		}
	}
	plans := map[string]bool{}
	for _, f := range plan.Flags {
		for _, name := range f.Names() {
			plans[name] = true
		}
	}
	for _, f := range run.Flags {
		for _, name := range f.Names() {
			cells, ok := rows[name]
			if !ok {
				t.Errorf("the emit guide's table has no row for %s", name)
				continue
			}
			for i, target := range emit.Targets {
				refused := strings.HasPrefix(cells[i], "refused")
				// Run's own flags (--quiet, --wait, --check, …) are not
				// plan's at all: plan refuses them as unknown.
				if why := emit.Refusal(target, name); (why != "" || !plans[name]) != refused {
					t.Errorf("emit guide: %s on %s says %q; --emit refuses it: %v", name, target, cells[i], why != "")
				}
			}
		}
	}
}
