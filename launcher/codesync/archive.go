package codesync

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// The archive holds the tree under c/, then a member "done" holding the
// hash: the host renames c/ into place only when "done" names the tree it
// expects (scripts/sync.sh). Only what depends on the content is in it:
// no owners, one fixed time (the hosts do not restore it), modes 0755 or
// 0644 by the executable bit, as git keeps them. So the same content gives
// the same bytes, and the hash of those bytes names the tree.
const (
	treeDir    = "c/"
	doneMember = "done"
	// hashVersion starts what is hashed: a change of the archive's layout
	// must not give an old name to a new layout.
	hashVersion = "tfhive-code 1\n"
)

var archiveTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// hash sets Hash and Bytes by writing the tree's archive into a hash.
func (t *Tree) hash() error {
	h := sha256.New()
	io.WriteString(h, hashVersion)
	cw := &countWriter{w: h}
	tw := tar.NewWriter(cw)
	if err := t.writeEntries(tw); err != nil {
		return err
	}
	// What follows the entries: "done" (a header and a block) and the
	// archive's end (two blocks).
	t.Hash, t.Bytes = hex.EncodeToString(h.Sum(nil)), cw.n+4*512
	return nil
}

// writeEntries writes the tree's entries, padding included: the bytes
// the hash covers.
func (t *Tree) writeEntries(tw *tar.Writer) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: treeDir, Mode: 0o755, ModTime: archiveTime}); err != nil {
		return err
	}
	for _, e := range t.entries {
		hdr := &tar.Header{Name: treeDir + e.rel, Mode: 0o644, ModTime: archiveTime}
		switch e.kind {
		case 'd':
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
		case 'l':
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, e.target, 0o777
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, e.size
			if e.exec {
				hdr.Mode = 0o755
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if e.kind == 'f' {
			if err := t.copyFile(tw, e); err != nil {
				return err
			}
		}
	}
	return tw.Flush()
}

// copyFile copies exactly the size listed; a file that shrank since is an
// error, and one that changed otherwise changes the hash, which Send
// checks before the host may keep what it got.
func (t *Tree) copyFile(w io.Writer, e entry) error {
	p := t.Root + "/" + e.rel
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return &Error{Msg: fmt.Sprintf("--sync: cannot read %s: %v", p, unwrapPath(err))}
	}
	defer f.Close()
	if _, err := io.CopyN(w, f, e.size); err == io.EOF {
		return &Error{Msg: fmt.Sprintf("--sync: %s changed while being read", p), Fix: "run again once nothing writes into the tree"}
	} else if err != nil {
		return err
	}
	return nil
}

// writeEnd finishes an archive whose entries hashed to t.Hash: the
// "done" member, then the end of the archive.
func (t *Tree) writeEnd(tw *tar.Writer) error {
	body := t.Hash + "\n"
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: doneMember, Mode: 0o644, Size: int64(len(body)), ModTime: archiveTime}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, body); err != nil {
		return err
	}
	return tw.Close()
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
