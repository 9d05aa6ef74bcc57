package probe

import "github.com/tfhive/tfhive/probe/internal/testfs"

var writeFile = testfs.WriteFile
