package hostkeys

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/tfhive/tfhive/probe/localfile"
)

// maxKnownHostsLine bounds one known_hosts line. x/crypto reads lines with a
// bufio.Scanner that fails the whole file past 64 KiB; no real line comes
// near (an RSA-16384 key is under 3 KiB of base64), so a longer one is
// garbage and is skipped like any other malformed line.
const maxKnownHostsLine = 32 << 10

// maxKnownHostsSize caps a known_hosts file (see localfile): it only grows
// (every host ever trusted, each key on its own line, an RSA line is ~600
// bytes) and the system one may be generated for a whole site, so it gets
// more room than other files: 64 MiB is about 100,000 hosts.
const maxKnownHostsSize = 64 << 20

// CheckFiles refuses, before any host is dialled, a known_hosts file that
// every dial would refuse: a FIFO, a device (os.DevNull aside), one over
// the cap. A file that does not exist is no error (none trusted yet).
func CheckFiles(files []string) error {
	for _, f := range files {
		if err := localfile.Check(f, maxKnownHostsSize); err != nil {
			return fmt.Errorf("known_hosts: %w", localfile.Describe(err))
		}
	}
	return nil
}

// maxWarningsPerFile: a file that is not known_hosts at all (a binary, a
// wrong path) would otherwise print a warning per line.
const maxWarningsPerFile = 5

// khDB is the host key database built from one list of known_hosts files,
// with the state of each file it was built from.
type khDB struct {
	files []string
	stats []fs.FileInfo // nil where the file did not exist
	check ssh.HostKeyCallback
	err   error
}

// database returns the host key check for files, reading them again only
// when one changed since the last call (an --accept-new-host-keys append, an
// ssh-keygen -R during a --watch). Reading them once per dial instead would
// cost a 64 MiB system file per host and repeat every warning. k.mu must be
// held.
func (k *Checker) database(files []string) (ssh.HostKeyCallback, error) {
	stats := make([]fs.FileInfo, len(files))
	for i, f := range files {
		// Any stat error counts as "no such file", as OpenSSH skips a
		// known_hosts it cannot look at (and --accept-new-host-keys then
		// reports why it cannot write there).
		stats[i], _ = os.Stat(f)
	}
	key := strings.Join(files, "\x00")
	if db, ok := k.dbs[key]; ok && sameStats(db.stats, stats) {
		return db.check, db.err
	}
	check, err := k.readKnownHosts(files, stats)
	k.dbs[key] = &khDB{files: files, stats: stats, check: check, err: err}
	return check, err
}

func sameStats(a, b []fs.FileInfo) bool {
	for i := range a {
		switch {
		case a[i] == nil || b[i] == nil:
			if a[i] != b[i] {
				return false
			}
		case !os.SameFile(a[i], b[i]) || a[i].Size() != b[i].Size() || !a[i].ModTime().Equal(b[i].ModTime()):
			return false
		}
	}
	return true
}

// readKnownHosts builds the check with x/crypto's knownhosts, which gives up
// on a whole file at its first malformed line. OpenSSH skips such a line with
// a warning and keeps every other one; so do we, by handing knownhosts a copy
// of the file with the bad lines blanked (line numbers unchanged). x/crypto
// only reads named files, hence the short-lived temporary copy, made only
// for a file that needs it.
func (k *Checker) readKnownHosts(files []string, stats []fs.FileInfo) (ssh.HostKeyCallback, error) {
	var paths []string
	copies := map[string]string{} // temporary copy → the file it stands for
	defer func() {
		for tmp := range copies {
			os.Remove(tmp)
		}
	}()
	for i, name := range files {
		if stats[i] == nil {
			continue
		}
		data, err := localfile.Read(name, maxKnownHostsSize)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("known_hosts: %w", localfile.Describe(err))
		}
		if len(data) == 0 {
			continue
		}
		clean, problems := sanitizeKnownHosts(data)
		k.reportProblems(name, problems)
		if len(problems) == 0 {
			paths = append(paths, name)
			continue
		}
		tmp, err := writeTempCopy(clean)
		if err != nil {
			return nil, fmt.Errorf("known_hosts: %s: cannot skip its malformed lines: %w", name, err)
		}
		copies[tmp] = name
		paths = append(paths, tmp)
	}
	if len(paths) == 0 {
		return nil, nil
	}
	cb, err := knownhosts.New(paths...)
	if err != nil {
		// The file changed between our read and x/crypto's, or x/crypto
		// refuses something sanitizeKnownHosts let through.
		msg := strings.TrimPrefix(err.Error(), "knownhosts: ")
		for tmp, name := range copies {
			msg = strings.ReplaceAll(msg, tmp, name)
		}
		return nil, errors.New("known_hosts: " + msg)
	}
	if len(copies) == 0 {
		return cb, nil
	}
	// Errors must name the user's file, not the copy (which is gone by
	// then: knownhosts holds everything in memory).
	rename := func(kk knownhosts.KnownKey) knownhosts.KnownKey {
		if name, ok := copies[kk.Filename]; ok {
			kk.Filename = name
		}
		return kk
	}
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := cb(hostname, remote, key)
		var ke *knownhosts.KeyError
		var rev *knownhosts.RevokedError
		switch {
		case errors.As(err, &ke):
			out := &knownhosts.KeyError{}
			for _, w := range ke.Want {
				out.Want = append(out.Want, rename(w))
			}
			return out
		case errors.As(err, &rev):
			return &knownhosts.RevokedError{Revoked: rename(rev.Revoked)}
		}
		return err
	}, nil
}

func writeTempCopy(data []byte) (string, error) {
	f, err := os.CreateTemp("", "tfhive-known_hosts-")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// khProblem is a known_hosts line that is skipped.
type khProblem struct {
	line int
	why  string
}

// reportProblems warns once per skipped line (a file read again after a
// change repeats none), at most maxWarningsPerFile per file.
func (k *Checker) reportProblems(name string, problems []khProblem) {
	for i, p := range problems {
		msg := fmt.Sprintf("%s:%d: %s (line skipped)", name, p.line, p.why)
		if i == maxWarningsPerFile {
			msg = fmt.Sprintf("%s: %d more malformed lines skipped", name, len(problems)-i)
		}
		if !k.warned[msg] {
			k.warned[msg] = true
			k.warn(msg)
		}
		if i == maxWarningsPerFile {
			return
		}
	}
}

// sanitizeKnownHosts blanks the lines x/crypto's knownhosts would refuse,
// keeping line numbers. It splits lines as bufio.ScanLines does.
func sanitizeKnownHosts(data []byte) ([]byte, []khProblem) {
	var problems []khProblem
	clean := make([]byte, 0, len(data))
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		text := bytes.TrimSuffix(line, []byte("\n"))
		var err error
		if len(text) > maxKnownHostsLine {
			err = fmt.Errorf("line longer than %s", localfile.SizeString(maxKnownHostsLine))
		} else {
			err = checkKnownHostsLine(bytes.Trim(bytes.TrimSuffix(text, []byte("\r")), " \t"))
		}
		if err != nil {
			problems = append(problems, khProblem{line: i + 1, why: err.Error()})
			line = line[len(text):] // its newline, if any
		}
		clean = append(clean, line...)
	}
	return clean, problems
}

// checkKnownHostsLine refuses what x/crypto's knownhosts parseLine (and the
// host matchers it builds) would, in words for a warning. A comment or an
// empty line is fine.
func checkKnownHostsLine(line []byte) error {
	if len(line) == 0 || line[0] == '#' {
		return nil
	}
	marker, rest := khWord(line)
	if marker != "@cert-authority" && marker != "@revoked" {
		marker, rest = "", line
	}
	pattern, rest := khWord(rest)
	if strings.HasPrefix(pattern, "@") {
		return fmt.Errorf("unknown marker %q", pattern)
	}
	if len(rest) == 0 {
		return errors.New("no key type and key after the host names")
	}
	keyType, rest := khWord(rest)
	if len(rest) == 0 {
		return fmt.Errorf("no key after the key type %s", keyType)
	}
	blob, _ := khWord(rest)
	raw, err := base64.StdEncoding.DecodeString(blob)
	if err != nil {
		return fmt.Errorf("the key is not valid base64 (%v)", err)
	}
	key, err := ssh.ParsePublicKey(raw)
	if err != nil {
		if strings.Contains(err.Error(), "unknown key algorithm") {
			return fmt.Errorf("unsupported key type %s", keyType)
		}
		return fmt.Errorf("the %s key is corrupt", keyType)
	}
	if key.Type() != keyType {
		return fmt.Errorf("the key is %s, the line says %s", key.Type(), keyType)
	}
	if marker == "@revoked" {
		return nil
	}
	if pattern[0] == '|' {
		parts := strings.Split(pattern, "|")
		if len(parts) != 4 || parts[1] != "1" {
			return errors.New("bad hashed host name")
		}
		for _, p := range parts[2:] {
			if _, err := base64.StdEncoding.DecodeString(p); err != nil {
				return errors.New("bad hashed host name")
			}
		}
		return nil
	}
	for _, p := range strings.Split(pattern, ",") {
		if p == "" {
			continue
		}
		if p[0] == '!' {
			if p = p[1:]; p == "" {
				return errors.New("`!` without a host name")
			}
		}
		if p[0] == '[' {
			if _, _, err := net.SplitHostPort(p); err != nil {
				return fmt.Errorf("bad host pattern %q", p)
			}
		}
	}
	return nil
}

// khWord is knownhosts' nextWord: up to the first space or tab, and the
// rest with its surrounding blanks trimmed.
func khWord(line []byte) (string, []byte) {
	i := bytes.IndexAny(line, "\t ")
	if i < 0 {
		return string(line), nil
	}
	return string(line[:i]), bytes.Trim(line[i:], " \t")
}
