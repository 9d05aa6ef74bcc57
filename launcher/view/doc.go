// Package view renders for people what tfhive shows: its borderless
// tables (status, plan, ps, runs, a run's summary), the plan and status
// documents, and the sanitising that keeps bytes from hosts and tasks
// from driving the user's terminal (tables and console lines alike).
//
// It writes only to the io.Writer it is given: no file, no clock of its
// own (ps is handed "now"), no SSH, no process. So it imports only the
// data it shows (schedule, probe/inventory, launcher/record) and
// probe/wording, never launcher or another launcher package, which
// import it for their output (TestImportsOnlyData): a renderer that
// could reach a host would make every golden test a test of a fleet.
package view
