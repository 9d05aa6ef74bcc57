// Package probe learns what each host of the fleet has: its GPUs and their
// processes (nvidia-smi), the TCP ports in use, its network interfaces'
// addresses and tfhive's claims, in one remote command per host over the
// host's one connection (Fleet), and parses what that command prints.
//
// It must not import the planner or the launcher: data flows probe ->
// schedule -> launcher. Its sub-packages hold the rest of reaching a host:
// inventory (the data, stdlib only), hosts (the configuration), hostkeys,
// transport (SSH connections), remote (executors and spare sessions),
// claim (the claim-file format), localfile (capped reads of local files),
// wording (phrasings messages share); sshtest is the test bed of real sshd
// servers, hosttest its in-process counterpart (fake hosts that Options.Dial
// reaches without SSH).
package probe
