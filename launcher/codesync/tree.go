// Package codesync makes a local directory's content present on hosts
// (`--sync DIR`) and clears it away again (`tfhive gc`). Prepare lists
// the tree (what git ignores and --sync-exclude names left out, symlinks
// out of the tree refused) and hashes it; Send streams it as a tar archive
// over each host's open connection into a content-addressed directory,
// ~/.cache/tfhive/code/HASH, which only ever appears whole; GC removes the
// directories nothing uses. The host side is scripts/*.sh, which need only
// sh, tar and coreutils there.
//
// It imports probe/remote and probe/remote/shscript of tfhive; the probe
// (probe/scripts/code.sh) tells whether a host has a tree already.
package codesync

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// Tree is a directory as it will be sent: its entries in a fixed order
// and the hash of its archive, which names it on the hosts.
type Tree struct {
	// Root is the directory, absolute, symlinks resolved.
	Root string
	// Git says .gitignore was applied: Root is in a git work tree.
	Git bool
	// Hash is the hex SHA-256 of the tree's archive: paths, types,
	// executable bits, symlink targets and file contents.
	Hash string
	// Bytes is the archive's size, what one transfer sends.
	Bytes int64
	// Files counts regular files and symlinks.
	Files   int
	entries []entry
}

// entry is one directory, regular file or symlink below Root.
type entry struct {
	rel    string // slash-separated, relative to Root
	kind   byte   // 'd', 'f' or 'l'
	exec   bool   // a file with an executable bit
	size   int64
	target string // a symlink's
}

// Error is a tree that cannot be sent as it stands: the directory, a
// symlink leading out of it, a pattern, a file that cannot be read. It is
// found before any host is touched.
type Error struct {
	Msg string
	Fix string
}

func (e *Error) Error() string { return e.Msg }

// Hint says how to fix it.
func (e *Error) Hint() string { return e.Fix }

// Prepare lists dir and hashes it. Left out: every .git, what git
// ignores when dir is in a git work tree (tracked files are always
// sent), what matches an exclude pattern (see Excluded), and the
// directories leave names (tfhive's own log root and log dir: runs'
// records would change the hash at every run, and be sent again). Without git
// on this machine .gitignore cannot be read: warn says so, once, and
// only .git and the patterns are left out. warn also names the special
// files (sockets, FIFOs, devices) skipped.
func Prepare(dir string, excludes, leave []string, warn func(string)) (*Tree, error) {
	for _, p := range excludes {
		if err := checkPattern(p); err != nil {
			return nil, err
		}
	}
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, &Error{Msg: fmt.Sprintf("--sync %s: %v", dir, unwrapPath(err))}
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, &Error{Msg: fmt.Sprintf("--sync %s: not a directory", dir), Fix: "--sync takes the directory whose content every host should have"}
	}
	t := &Tree{Root: root}
	left := map[string]bool{}
	for _, d := range leave {
		if d, err := filepath.Abs(d); err == nil {
			if real, err := filepath.EvalSymlinks(d); err == nil {
				d = real
			}
			left[d] = true
		}
	}
	ignored, err := t.gitIgnored(warn)
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &Error{Msg: fmt.Sprintf("--sync: cannot read %s: %v", p, unwrapPath(err))}
		}
		if p == root {
			return nil
		}
		rel := filepath.ToSlash(p[len(root)+1:])
		if d.Name() == ".git" || ignored[rel] || Excluded(rel, excludes) || d.IsDir() && left[p] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		e := entry{rel: rel}
		switch mode := d.Type(); {
		case mode.IsDir():
			e.kind = 'd'
		case mode.IsRegular():
			fi, err := d.Info()
			if err != nil {
				return &Error{Msg: fmt.Sprintf("--sync: cannot read %s: %v", p, unwrapPath(err))}
			}
			e.kind, e.size, e.exec = 'f', fi.Size(), fi.Mode()&0o111 != 0
		case mode&fs.ModeSymlink != 0:
			if e.target, err = checkLink(root, p, rel); err != nil {
				return err
			}
			e.kind = 'l'
		default:
			warn(fmt.Sprintf("--sync: %s is not a file, directory or symlink (%s): not sent", rel, mode.Type()))
			return nil
		}
		t.entries = append(t.entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, e := range t.entries {
		if e.kind != 'd' {
			t.Files++
		}
	}
	if err := t.hash(); err != nil {
		return nil, err
	}
	return t, nil
}

// checkLink refuses a symlink whose target lies outside root: its target
// would not exist on the hosts, or would be whatever the host has there.
// The target is resolved as the kernel would, through the symlinks on its
// way; one that does not exist (yet) is judged by its path from the
// link's directory.
func checkLink(root, p, rel string) (string, error) {
	target, err := os.Readlink(p)
	if err != nil {
		return "", &Error{Msg: fmt.Sprintf("--sync: cannot read %s: %v", p, unwrapPath(err))}
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil && !filepath.IsAbs(target) {
		if parent, perr := filepath.EvalSymlinks(filepath.Dir(p)); perr == nil {
			resolved, err = filepath.Join(parent, target), nil
		}
	}
	if err == nil && filepath.IsAbs(target) && within(root, resolved) {
		return "", &Error{
			Msg: fmt.Sprintf("--sync: symlink %s is absolute (-> %s): on the hosts the tree is elsewhere", rel, target),
			Fix: "make it relative, e.g. ln -sfn RELATIVE/PATH " + rel + ", or leave it out with --sync-exclude " + rel,
		}
	}
	if err != nil || filepath.IsAbs(target) || !within(root, resolved) {
		return "", &Error{
			Msg: fmt.Sprintf("--sync: symlink %s points outside %s (-> %s)", rel, root, target),
			Fix: "tfhive sends symlinks as they are and never follows one out of the tree: make it relative and inside, copy what it points to into the tree, or leave it out with --sync-exclude " + rel,
		}
	}
	return target, nil
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// gitIgnored asks git which paths below Root it ignores: directories as
// a whole, untracked files one by one; tracked files are never ignored.
// One git process, whose answer also says whether Root is in a work
// tree at all.
func (t *Tree) gitIgnored(warn func(string)) (map[string]bool, error) {
	if _, err := exec.LookPath("git"); err != nil {
		if inWorkTree(t.Root) {
			warn("--sync: git is not installed here, so .gitignore is not applied: everything in " + t.Root + " but .git and --sync-exclude patterns is sent")
		}
		return nil, nil
	}
	cmd := exec.Command("git", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	cmd.Dir = t.Root
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), "not a git repository") {
			return nil, nil
		}
		msg := strings.TrimSpace(strings.TrimPrefix(firstLine(stderr.String()), "fatal: "))
		if msg == "" {
			msg = err.Error()
		}
		return nil, &Error{Msg: "--sync: git could not list what " + t.Root + " ignores: " + msg}
	}
	t.Git = true
	ignored := map[string]bool{}
	for _, p := range bytes.Split(out, []byte{0}) {
		if s := strings.TrimSuffix(string(p), "/"); s != "" {
			ignored[s] = true
		}
	}
	return ignored, nil
}

// inWorkTree looks for a .git in dir or above it, as git would.
func inWorkTree(dir string) bool {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// Excluded says whether a --sync-exclude pattern leaves out the path
// rel (slash-separated, relative to the tree): a pattern without a slash
// matches a file or directory name at any depth (`*.ckpt`, `data`), one
// with a slash the whole path from the tree's top (`data/raw/*`,
// `/build`). A directory left out takes everything in it along.
func Excluded(rel string, patterns []string) bool {
	base := path.Base(rel)
	for _, p := range patterns {
		p = strings.TrimSuffix(p, "/")
		var ok bool
		if strings.Contains(p, "/") {
			ok, _ = path.Match(strings.TrimPrefix(p, "/"), rel)
		} else {
			ok, _ = path.Match(p, base)
		}
		if ok {
			return true
		}
	}
	return false
}

func checkPattern(p string) error {
	if strings.Trim(p, "/") == "" {
		return &Error{Msg: fmt.Sprintf("--sync-exclude %q: empty pattern", p), Fix: "give a name or path pattern, e.g. --sync-exclude '*.ckpt' or --sync-exclude data/raw"}
	}
	if _, err := path.Match(p, ""); err != nil {
		return &Error{Msg: fmt.Sprintf("--sync-exclude %q: %v", p, err), Fix: "patterns use * ? [a-z] and \\ as in the shell"}
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
