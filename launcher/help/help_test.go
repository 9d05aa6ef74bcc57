package help

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every guide file is listed once, in order, with a title; nothing listed
// lacks its file.
func TestEveryGuideListed(t *testing.T) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range entries {
		onDisk = append(onDisk, strings.TrimSuffix(e.Name(), ".md"))
	}
	sorted := slices.Sorted(slices.Values(order))
	if !slices.Equal(onDisk, sorted) {
		t.Errorf("guide files %q, listed in order %q", onDisk, order)
	}
	if got := Names(); !slices.Equal(got, order) {
		t.Errorf("Names() = %q, want %q", got, order)
	}
	for _, tp := range Topics() {
		text, _ := Guide(tp.Name)
		if !strings.HasPrefix(text, "# ") || tp.Title == "" || strings.ContainsAny(tp.Title, "`{}") {
			t.Errorf("%s: title %q: a guide begins with `# Title`, plain text", tp.Name, tp.Title)
		}
		if !strings.HasSuffix(text, "\n") || strings.HasSuffix(text, "\n\n") {
			t.Errorf("%s: should end with exactly one newline", tp.Name)
		}
	}
	for _, name := range []string{"", "nosuch", "../README", "hosts.md", "."} {
		if _, ok := Guide(name); ok {
			t.Errorf("Guide(%q) found something", name)
		}
	}
}

// Prose is wrapped at 100 columns in the source; code blocks and table
// rows, which cannot wrap, are not.
func TestGuidesWrapped(t *testing.T) {
	for _, name := range order {
		text, _ := Guide(name)
		fence := false
		for i, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "```") {
				fence = !fence
				continue
			}
			if !fence && !strings.HasPrefix(line, "|") && len([]rune(line)) > 100 {
				t.Errorf("%s.md:%d is %d columns, more than 100", name, i+1, len([]rune(line)))
			}
		}
	}
}

// readme is the repository's README.
func readme(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The README is the way in, no more: past 400 lines, what it gained
// belongs in a guide.
func TestREADMEShort(t *testing.T) {
	if n := strings.Count(readme(t), "\n"); n > 400 {
		t.Errorf("README.md has %d lines, more than 400: move the detail into a guide (launcher/help)", n)
	}
}

// Every link of the README to a guide names one that exists, and every
// guide is linked from the README.
func TestREADMELinksResolve(t *testing.T) {
	text := readme(t)
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\((launcher/help/[^)#]*)`).FindAllStringSubmatch(text, -1) {
		path := m[1]
		if path == "launcher/help/" {
			continue
		}
		name, ok := strings.CutSuffix(strings.TrimPrefix(path, "launcher/help/"), ".md")
		if _, found := Guide(name); !ok || !found {
			t.Errorf("README links to %s, which is no guide", path)
			continue
		}
		linked[name] = true
	}
	for _, name := range order {
		if !linked[name] {
			t.Errorf("the README does not link to launcher/help/%s.md", name)
		}
	}
	// Its other relative links too.
	for _, m := range regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`).FindAllStringSubmatch(text, -1) {
		if _, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(m[1]))); err != nil {
			t.Errorf("README links to %s: %v", m[1], err)
		}
	}
}

// A guide's relative links lead to files of the repository, as the web
// shows them.
func TestGuideLinksResolve(t *testing.T) {
	linkRE := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, name := range order {
		text, _ := Guide(name)
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			if _, err := os.Stat(filepath.FromSlash(m[1])); err != nil {
				t.Errorf("%s.md links to %s: %v", name, m[1], err)
			}
		}
	}
}
