package report

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The log dir's CSV files (gpu-usage.csv, metrics.csv, events.csv) are
// read a line at a time: at most csvMaxBytes of each, lines longer than
// csvMaxLine passed over, fields split as the launcher writes them
// (quoted when they hold a comma or a quote).
const (
	csvMaxBytes = 256 << 20
	csvMaxLine  = 4 << 10
)

// errNotRegular: a FIFO or device where a file should be.
var errNotRegular = errors.New("not a regular file")

// openBounded opens a file of the log dir for reading: a regular file,
// never a FIFO or device, read up to max bytes; cut: it holds more. size
// is what it held at the open, at most max: a buffer's size, not a bound
// (a run going on appends to its files).
func openBounded(path string, max int64) (r io.Reader, closeFile func() error, size int64, cut bool, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, 0, false, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, 0, false, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	// O_NONBLOCK: a FIFO swapped in since the stat must not hang the
	// open; the fstat refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, 0, false, err
	}
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, 0, false, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	return io.LimitReader(f, max), f.Close, min(st.Size(), max), st.Size() > max, nil
}

// readCSV calls row with each line's fields after the header, which must
// be header. It returns a note when the file was cut or lines were
// passed over, and an error when it could not be read at all.
func readCSV(path, header string, width int, row func([]string)) (note string, err error) {
	r, closeFile, size, cut, err := openBounded(path, csvMaxBytes)
	if err != nil {
		return "", err
	}
	defer closeFile()
	// 64 KiB at most, the file's size when smaller: a trial's events.csv
	// is a few lines, and every run's report reads it.
	br := bufio.NewReaderSize(r, int(min(64<<10, size+1)))
	bad := 0
	first := true
	fields := make([]string, 0, width)
	for {
		line, long, err := readLine(br)
		if err != nil && len(line) == 0 {
			if err != io.EOF {
				return "", err
			}
			break
		}
		if first {
			if string(line) != header {
				return "", fmt.Errorf("not the file tfhive writes (its first line is not %q)", header)
			}
			first = false
			continue
		}
		if long || len(line) == 0 {
			bad++
			continue
		}
		fields = splitCSV(fields[:0], line)
		if len(fields) != width {
			bad++
			continue
		}
		row(fields)
		if err != nil {
			break
		}
	}
	switch {
	case cut:
		// Its last line read may be cut too: one point at most.
		note = fmt.Sprintf("only the first %d MiB of %s were read", csvMaxBytes>>20, filepath.Base(path))
	case bad > 0:
		note = fmt.Sprintf("%s: %d lines passed over (not as tfhive writes them)", filepath.Base(path), bad)
	}
	return note, nil
}

// readLine reads one line without its newline; long: it was longer than
// csvMaxLine (and is not returned).
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	var buf []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(buf)+len(part) > csvMaxLine+1 {
			long = true
		} else {
			buf = append(buf, part...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if long {
			if err != nil && err != io.EOF {
				return nil, true, err
			}
			return []byte{}, true, err
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r")), false, err
	}
}

// splitCSV splits a line into fields: quoted ones ("a,""b""") unquoted.
func splitCSV(fields []string, line []byte) []string {
	for {
		if len(line) > 0 && line[0] == '"' {
			var f []byte
			i := 1
			for i < len(line) {
				if line[i] == '"' {
					if i+1 < len(line) && line[i+1] == '"' {
						f = append(f, '"')
						i += 2
						continue
					}
					i++
					break
				}
				f = append(f, line[i])
				i++
			}
			fields = append(fields, string(f))
			line = line[i:]
		} else {
			k := bytes.IndexByte(line, ',')
			if k < 0 {
				return append(fields, string(line))
			}
			fields = append(fields, string(line[:k]))
			line = line[k:]
		}
		if len(line) == 0 {
			return fields
		}
		if line[0] != ',' {
			return nil // text after a closing quote: not a line of ours
		}
		line = line[1:]
	}
}

// parseTime reads the launcher's times (2006-01-02T15:04:05.000Z): by
// hand, as a long run's gpu-usage.csv has millions; any other form
// through time.Parse.
func parseTime(s string) (time.Time, bool) {
	const layout = "2006-01-02T15:04:05.000Z"
	if len(s) == len(layout) && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' && s[19] == '.' && s[23] == 'Z' {
		n := [7]int{}
		ok := true
		for i, f := range [7][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}, {20, 23}} {
			for _, c := range s[f[0]:f[1]] {
				if c < '0' || c > '9' {
					ok = false
				}
				n[i] = n[i]*10 + int(c-'0')
			}
		}
		if ok && n[1] >= 1 && n[1] <= 12 && n[2] >= 1 && n[2] <= 31 && n[3] < 24 && n[4] < 60 && n[5] < 60 {
			return time.Date(n[0], time.Month(n[1]), n[2], n[3], n[4], n[5], n[6]*1e6, time.UTC), true
		}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
