// Package help holds tfhive's guides: Markdown files in this directory,
// one a topic, embedded in the binary and printed by `tfhive help TOPIC`
// (as `go help` prints its topics), and readable on the web where the
// README links to them. A guide's first line is its title, `# Title`;
// Topics lists them in reading order. Nothing here knows the commands:
// launcher/cli puts the list beside them.
package help

import (
	"embed"
	"strings"
)

//go:embed *.md
var files embed.FS

// order is the reading order of the guides, by name (the file's, less
// .md). A guide missing here, or a name here without its file, fails the
// tests.
var order = []string{
	"hosts", "gpus", "live-view", "plans", "running", "sweeps", "reports", "tensorboard-link", "reruns", "restarts",
	"hangs", "long-runs", "notifications", "sync", "torch", "checks", "sharing", "fair-sharing", "idle", "emit",
	"shell-completion", "performance", "testing", "architecture",
}

// Topic is one guide: its name, as typed after `tfhive help`, and its
// title, the file's first line.
type Topic struct {
	Name, Title string
}

// Topics lists the guides in reading order.
func Topics() []Topic {
	var topics []Topic
	for _, name := range order {
		text, ok := Guide(name)
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(text, "\n")
		topics = append(topics, Topic{Name: name, Title: strings.TrimPrefix(first, "# ")})
	}
	return topics
}

// Guide returns the guide named name, as its file has it.
func Guide(name string) (string, bool) {
	if name == "" || strings.ContainsAny(name, "/.") {
		return "", false
	}
	data, err := files.ReadFile(name + ".md")
	if err != nil {
		return "", false
	}
	return string(data), true
}

// Names lists the guides' names in reading order.
func Names() []string {
	var names []string
	for _, t := range Topics() {
		names = append(names, t.Name)
	}
	return names
}
