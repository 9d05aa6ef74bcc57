// Package sweep holds a sweep's pure decisions: parsing --param, the grid of
// combinations and a seeded random pick of them, the trials' ids, and the
// substitution of {NAME} into a trial's command and environment. No clock,
// no I/O: `tfhive sweep`, `plan --emit slurm` of a sweep (a job array) and
// the report all expand a sweep the same way from the same record.
package sweep
