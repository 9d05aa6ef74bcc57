// Package tensorboard is `tfhive tensorboard`'s own part: where a run's
// summaries are (ModelDir, from its plan), the script that starts a real
// TensorBoard on the host that holds them (Script, scripts/tensorboard.sh)
// and reads its word back (Word), and the forwarder that carries a
// browser's connections to it over tfhive's SSH connection (Forward).
// Choosing the run, reaching its host and a detached TensorBoard's
// keeper are launcher/commands'.
package tensorboard
