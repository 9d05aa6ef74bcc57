package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/tfhive/tfhive/launcher/emit"
)

// TestEmitProbesNothing: --emit reads no hosts file and contacts no host,
// whether hosts come from ./hosts.yaml or $TFHIVE_HOSTS.
func TestEmitProbesNothing(t *testing.T) {
	dir := isolate(t)
	addr, untouched := silentHost(t)
	hosts := "hosts:\n  - " + addr + "\n"
	os.WriteFile("hosts.yaml", []byte(hosts), 0o644)
	os.WriteFile(dir+"/other.yaml", []byte(hosts), 0o644)
	t.Setenv("TFHIVE_HOSTS", dir+"/other.yaml")
	for _, c := range []struct {
		args  []string
		first string
	}{
		{[]string{"plan", "--emit", "slurm", "--ps", "1", "--workers", "2", "--", "python", "train.py"}, "#!/bin/bash -l\n"},
		{[]string{"plan", "--emit", "tfjob", "--image", "ghcr.io/me/train:1", "--", "python", "train.py"}, "# tfhive run "},
		{[]string{"plan", "--emit", "pytorchjob", "--image", "pytorch/pytorch", "--workers", "2", "--", "python", "train.py"}, "# tfhive run "},
	} {
		code, stdout, stderr := tfhive(t, c.args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, c.first) {
			t.Errorf("%q: exit %d, stderr %q, stdout begins %.40q", c.args, code, stderr, stdout)
		}
	}
	if !untouched() {
		t.Error("--emit contacted a host")
	}
}

func TestEmitUsage(t *testing.T) {
	isolate(t)
	addr, untouched := silentHost(t)
	for _, c := range []struct {
		args  []string
		lines []string
	}{
		{[]string{"plan", "--emit", "slurm", "-H", addr, "--", "python"}, []string{
			"tfhive: error: --host has no counterpart in --emit slurm: the cluster manager places the tasks; nothing is probed",
			`tfhive: hint: drop --host; the README's "Moving to Slurm or Kubernetes" maps every flag`}},
		{[]string{"plan", "--emit", "tfjob", "--strategy", "pack", "--image", "x", "--", "python"}, []string{
			"tfhive: error: --strategy has no counterpart in --emit tfjob: the Kubernetes scheduler places the pods",
			`tfhive: hint: drop --strategy; the README's "Moving to Slurm or Kubernetes" maps every flag`}},
		{[]string{"plan", "--emit", "slurm", "--nic", "auto", "--", "python"}, []string{
			"tfhive: error: --nic has no counterpart in --emit slurm: the tasks reach each other by node or Service name; to pin NCCL or gloo to an interface, use --env NCCL_SOCKET_IFNAME=NAME --env GLOO_SOCKET_IFNAME=NAME",
			`tfhive: hint: drop --nic; the README's "Moving to Slurm or Kubernetes" maps every flag`}},
		{[]string{"plan", "--emit", "slurm", "--check", "--", "python"}, []string{
			"tfhive: error: flag provided but not defined: -check",
			"tfhive: hint: see `tfhive plan --help`"}},
		{[]string{"plan", "--env", "A=1", "-H", addr, "--", "python"}, []string{
			"tfhive: error: --env only applies with --emit",
			"tfhive: hint: tfhive run takes it; plan takes it with --emit slurm, tfjob or pytorchjob"}},
		{[]string{"plan", "--emit", "tfjob", "--", "python"}, []string{
			"tfhive: error: --emit tfjob needs --image",
			"tfhive: hint: name the container image the pods run, e.g. --image ghcr.io/me/train:1.0"}},
		{[]string{"plan", "--emit", "nomad", "--", "python"}, []string{
			`tfhive: error: unknown --emit target "nomad"`,
			"tfhive: hint: use --emit slurm, --emit tfjob, --emit pytorchjob"}},
		{[]string{"plan", "--emit", "slurm", "--quiet", "--", "python"}, []string{
			"tfhive: error: flag provided but not defined: -quiet",
			"tfhive: hint: see `tfhive plan --help`"}},
	} {
		wantUsage(t, c.args, c.lines...)
	}
	if !untouched() {
		t.Error("a refused --emit contacted a host")
	}
}

// TestEmitREADMETable holds the README's table of flags per target to
// what --emit does: every flag of `tfhive run` has a row, and a target's
// cell says "refused" exactly when --emit refuses the flag there.
func TestEmitREADMETable(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "### Every flag, on every target\n")
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
				t.Errorf("the README's table has no row for %s", name)
				continue
			}
			for i, target := range emit.Targets {
				refused := strings.HasPrefix(cells[i], "refused")
				// Run's own flags (--quiet, --wait, --check, …) are not
				// plan's at all: plan refuses them as unknown.
				if why := emit.Refusal(target, name); (why != "" || !plans[name]) != refused {
					t.Errorf("README: %s on %s says %q; --emit refuses it: %v", name, target, cells[i], why != "")
				}
			}
		}
	}
}
