package tensorboard

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listener says whether a socket listens on 127.0.0.1:port, as
// /proc/net/tcp lists it, and whether it is TensorBoard's: one of the
// descriptors of a process of group pgid (TensorBoard's own, started
// with one). uid is the listening socket's owner. The port was free when
// chosen and is anyone's until TensorBoard binds it: one that another
// process listens on would be sent the secret path, then the user's
// browser (scripts/tensorboard.sh does the same on a host).
func Listener(port, pgid int) (listening, ours bool, uid int, err error) {
	return listener("/proc", port, pgid)
}

func listener(proc string, port, pgid int) (listening, ours bool, uid int, err error) {
	data, err := os.ReadFile(filepath.Join(proc, "net", "tcp"))
	if err != nil {
		return false, false, 0, err
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	inode := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 10 && f[1] == want && f[3] == "0A" {
			uid, _ = strconv.Atoi(f[7])
			inode = f[9]
			break
		}
	}
	if inode == "" {
		return false, false, 0, nil
	}
	target := "socket:[" + inode + "]"
	procs, _ := os.ReadDir(proc)
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(proc, p.Name(), "stat"))
		if err != nil {
			continue
		}
		// "PID (COMM) STATE PPID PGRP ...": COMM may hold anything, up to
		// the last paren.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		g := strings.Fields(string(stat[i+1:]))
		if len(g) < 3 || g[2] != strconv.Itoa(pgid) {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join(proc, p.Name(), "fd"))
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(proc, p.Name(), "fd", fd.Name())); err == nil && l == target {
				return true, true, uid, nil
			}
		}
	}
	return true, false, uid, nil
}
