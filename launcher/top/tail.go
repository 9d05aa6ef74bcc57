package top

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tfhive/tfhive/launcher/rundir"
)

// tailMax bounds what top reads of a log file for its pane: the last
// screenful of lines is well within it.
const tailMax = 64 << 10

// TailLog reads the last n lines of one of run's log files in its
// local log dir: the console (a detached run's), then the tasks' logs
// and the keeper's, by name.
func TailLog(run Run, file, n int) LogTail {
	t := LogTail{File: file}
	entries, err := os.ReadDir(run.LogDir)
	if err != nil {
		t.Err = fmt.Errorf("%s: %v", run.LogDir, rundir.PathErr(err))
		return t
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), rundir.LogSuffix) {
			t.Files = append(t.Files, e.Name())
		}
	}
	// The console first: it is all the tasks' output, prefixed.
	slices.SortStableFunc(t.Files, func(a, b string) int {
		return boolInt(b == rundir.Console) - boolInt(a == rundir.Console)
	})
	if len(t.Files) == 0 {
		t.Err = errors.New("no log files in " + run.LogDir + " yet")
		return t
	}
	if t.File >= len(t.Files) {
		t.File = 0
	}
	t.Lines, t.Err = tailLines(filepath.Join(run.LogDir, t.Files[t.File]), n)
	return t
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tailLines is the last n lines of path, from at most its last tailMax
// bytes; a line cut by that bound is left out. Only a regular file is
// read (O_NONBLOCK: a FIFO put in its place must not hang top).
func tailLines(path string, n int) ([]string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, rundir.PathErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	off := max(fi.Size()-tailMax, 0)
	buf := make([]byte, fi.Size()-off)
	k, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	buf = buf[:k]
	if off > 0 {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	// A progress bar's frames end in "\r": the last one is the line.
	text := strings.TrimRight(string(buf), "\n")
	if text == "" {
		return nil, nil
	}
	lines := strings.Split(text, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if j := strings.LastIndex(strings.TrimRight(l, "\r"), "\r"); j >= 0 {
			l = l[j+1:]
		}
		lines[i] = strings.TrimRight(l, "\r")
	}
	return lines, nil
}
