// Package sweepjob is a sweep from its record to its end, as
// launcher/job is a run from request to summary: `tfhive sweep` runs
// each trial as a run of its own (tfhive-runs/NAME-NNN), in this process
// as `tfhive run --wait` runs, so that it waits its turn in the hosts'
// queue with a ticket like any other run. At most --max-parallel trials
// are under way at once (by default as many as the fleet's GPUs fit): a
// trial enters the queue only when one ends, so a sweep never holds more
// places in it than it can use, and a colleague who queued first starts
// first. All trials share one connection per host (probe.Shared), their
// probes (probe.Coalescer) and one placement book (sweep.Book): a trial
// plans first on the newest probe, then on probes begun after it asked,
// keeping off the GPUs its siblings have planned and seeing those that
// ended trials freed, so trials started together do not all race for
// the same first free GPU. Each trial's console (its tasks' output, its summary)
// goes to console.log in its log dir, where `tfhive logs TRIAL` reads
// it; the sweep says when each trial starts and ends.
//
// Run holds the sweep's lock, writes its record (sweep.json), hears
// `tfhive kill`'s stop file and the signals, and adopts what a dead
// tfhive left of its trials on the hosts (resume.go). The pure
// decisions (the grid, trial ids, the queue, the book) are
// launcher/sweep's; making a trial's job.Spec from the run flags and
// printing the table are the caller's (launcher/commands), through
// Hooks. Like job, it imports no commands, CLI or view and reads no
// environment.
package sweepjob
