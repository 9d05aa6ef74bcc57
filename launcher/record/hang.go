package record

// ResultHung: --on-hang stop stopped the run once no task had printed
// anything for --hang-after, after taking every task's stacks.
const ResultHung = "hung"

// ExitHung is a hung run's exit code (main's table, README's "Exit
// codes").
const ExitHung = 7
