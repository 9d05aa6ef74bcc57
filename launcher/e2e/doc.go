// Package e2e holds the end-to-end tests: the real tfhive binary, built
// once, against real OpenSSH sshd hosts on loopback (probe/sshtest), with
// strict host keys, a fake nvidia-smi and, as root, separate hosts (own
// PID, mount and UTS namespaces) that share a home or not
// (TFHIVE_TEST_BED). With CI=true they run, never skip. It has no
// non-test code but this comment.
package e2e
