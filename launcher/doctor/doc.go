// Package doctor is `tfhive doctor` and `run --check`: what a task would
// meet on each host (Python, the modules it imports, the driver, CUDA,
// the --sync tree; scripts/doctor.sh and its Python part doctor.py), and
// the comparison across hosts that names the odd one out (report.go).
//
// A check is one round trip per host through the supervisor's command
// line, on stdin like a task's stage, so that setup snippets and env stay
// off command lines; that command is the only thing it takes from
// launcher/supervisor. The engine never imports doctor: a run that checks first
// (--check) is wired in launcher/commands. Its tables go through view.
package doctor
