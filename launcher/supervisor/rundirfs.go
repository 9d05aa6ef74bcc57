package supervisor

import "io/fs"

// WithRunDir is own, a package's embedded scripts, with the supervisor's
// scripts/rundir.sh in it: the layout of the hosts' run directories,
// which the scripts that read a kept run's files there start with. The
// supervisor writes those files, so its copy says where they are.
func WithRunDir(own fs.FS) fs.FS { return withRunDir{own} }

type withRunDir struct{ own fs.FS }

func (w withRunDir) Open(name string) (fs.File, error) {
	if name == "scripts/rundir.sh" {
		return Scripts.Open(name)
	}
	return w.own.Open(name)
}
