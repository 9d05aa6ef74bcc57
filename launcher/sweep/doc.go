// Package sweep holds a sweep's pure decisions: parsing --param, the grid of
// combinations and a seeded random pick of them, the trials' ids, the
// substitution of {NAME} into a trial's command and environment, the queue
// of its trials and the book that keeps them off each other's GPUs (an
// in-memory map under a mutex). No clock, no I/O: `tfhive sweep`, `plan
// --emit slurm` of a sweep (a job array) and the report all expand a sweep
// the same way from the same record.
package sweep
