// Package commands holds tfhive's commands (status, plan, run, ps, kill,
// doctor, gc) as functions over plain option structs: each validates its
// options, opens the fleet, probes, plans or launches, prints, and returns
// an error of an exported kind. It must not import urfave/cli,
// launcher/cli or package main, nor choose exit codes: flags are
// launcher/cli's and the exit-code table is main's. It may import probe,
// schedule, launcher and launcher's packages (view, hostops, doctor, …);
// none of them may import it.
package commands
