// Package commands holds tfhive's commands (status, plan, run, sweep, ps,
// kill, doctor, gc, top, …) as functions over plain option structs:
// options in, printing out. Each validates its options before any host is
// touched, opens the fleet, hands the work to the package that does it (a
// run's job.Spec to launcher/job, a sweep's sweepjob.Spec to
// launcher/sweepjob, hostops, doctor, top, …), prints what comes back and
// returns an error of an exported kind. It must not import urfave/cli,
// launcher/cli or package main, nor choose exit codes: flags are
// launcher/cli's and the exit-code table is main's. It may import probe,
// schedule, launcher and launcher's packages (view, hostops, doctor, …);
// none of them may import it.
package commands
