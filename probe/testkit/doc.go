// Package testkit holds the helpers that the tests of several tfhive
// packages share: golden files and the one -update flag that rewrites
// them, a buffer a test reads while something else writes it, and a
// collector of warnings.
//
// It is for tests only: no file but a _test.go file may import it (its
// own test checks the repository). It lives under probe, and not under
// probe/internal, so that the tests of schedule, launcher and launcher/e2e
// may import it too: the repository's top level is fixed. It imports only
// the standard library.
package testkit
