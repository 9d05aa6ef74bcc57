package e2e

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// sync: `tfhive run --sync` of syncMB MB of new code to 8 hosts (all,
// when fewer) against the same hosts each receiving it from its own
// `tar c | ssh host tar x`, all at once; then `run --sync` of code every
// host has against `run` without it. Every host's cache is emptied after
// each run that filled it.
func (b *bench) sync() {
	n := 8
	if maxN := b.hosts[len(b.hosts)-1]; maxN < n {
		n = maxN
	}
	b.syncHosts = n
	if os.Getenv("TFHIVE_BENCH_OWN_HOME") == "0" {
		b.printf("\n## sync: skipped (the hosts share one home, hence one code cache)\n")
		return
	}
	tree, size := b.syncTree()
	names := b.names(n)
	homes := make([]string, n)
	for i, h := range b.fleet.Hosts[:n] {
		homes[i] = h.Home()
	}
	clear := func(sub string) {
		for _, home := range homes {
			if err := os.RemoveAll(filepath.Join(home, sub)); err != nil {
				b.t.Fatal(err)
			}
		}
	}
	// Each run of new code changes one file, so that no host has it.
	rev := 0
	newCode := func() {
		rev++
		if err := os.WriteFile(filepath.Join(tree, "rev.txt"), []byte(fmt.Sprintln(rev)), 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	syncRun := func(what string, sync bool) measured {
		args, logDir := b.runArgs(n, "--workers", itoa(n))
		if sync {
			args = append(args, "--sync", tree)
		}
		m := b.execute(what, nil, false, append(args, "--", "true")...)
		b.wantSucceeded(what, logDir, n)
		if sync {
			s := summaryOf(b.t, logDir)
			if s.Code == nil || len(s.Code.Hosts) != n {
				b.t.Fatalf("%s: code %+v", what, s.Code)
			}
		}
		return m
	}
	sshOpts := strings.Join(b.sshArgs(), " ")
	// Each host's copy in a directory of its own: on a bed whose hosts
	// share one home (NFS, the default as root), tars extracting into one
	// directory at once collide ("Cannot open: File exists").
	script := `pids=; for h in ` + strings.Join(names, " ") + `; do
	tar c -C "$1" . | ssh ` + sshOpts + ` "$h" "mkdir -p \"\$HOME/tar-x/$h\" && tar x -C \"\$HOME/tar-x/$h\"" & pids="$pids $!"
done
rc=0; for p in $pids; do wait "$p" || rc=1; done; exit $rc`
	b.printf("\n## sync: %d MB of code (%d files) to %d hosts\n\n", size/1000/1000, b.syncFiles(tree), n)
	b.printf("| `tfhive run --sync` (new code) | %d × `tar c \\| ssh host tar x` at once | ratio | `run --sync` (unchanged code) | `run` | difference | budget: 1 RTT + 50 ms × %d |\n|---:|---:|---:|---:|---:|---:|---:|\n", n, n)
	res := b.race(
		contender{"tfhive run --sync", func() measured {
			newCode()
			m := syncRun("tfhive run --sync", true)
			clear(".cache")
			return m
		}},
		contender{"tar | ssh", func() measured {
			m := b.execute("tar | ssh", nil, false, "sh", "-c", script, "sh", tree)
			for i, home := range homes {
				if _, err := os.Stat(filepath.Join(home, "tar-x", names[i], "rev.txt")); err != nil {
					b.t.Fatalf("tar | ssh: %v", err)
				}
			}
			clear("tar-x")
			return m
		}},
	)
	sent, tarSSH := medianElapsed(res[0]), medianElapsed(res[1])
	b.syncRatio = ratio(sent, tarSSH)
	newCode()
	syncRun("tfhive run --sync (first)", true)
	res = b.race(
		contender{"tfhive run --sync (unchanged)", func() measured { return syncRun("tfhive run --sync (unchanged)", true) }},
		contender{"tfhive run", func() measured { return syncRun("tfhive run", false) }},
	)
	clear(".cache")
	unchanged, plain := medianElapsed(res[0]), medianElapsed(res[1])
	b.syncExtra = unchanged - plain
	b.printf("| %s | %s | %.2f× | %s | %s | %+.0f ms | %s |\n", ms(sent), ms(tarSSH), b.syncRatio, ms(unchanged), ms(plain),
		float64(b.syncExtra)/1e6, ms(b.rtt+time.Duration(n)*50*time.Millisecond))
	b.printf("\ntfhive's run includes its probe, plan and the tasks (`true`); the tar pipelines only copy. Unchanged code costs tfhive the local hash of the tree and the probe's check for it, no round trip of its own.\n")
}

// syncTree writes syncMB MB of random, incompressible files, 100 kB each
// in directories of 100, and returns the tree and its size.
func (b *bench) syncTree() (string, int64) {
	tree := filepath.Join(b.work, "sync-tree")
	const fileSize = 100 * 1000
	files := max(b.syncMB*1000*1000/fileSize, 1)
	buf := make([]byte, fileSize)
	for i := range files {
		dir := filepath.Join(tree, fmt.Sprintf("pkg%02d", i/100))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.t.Fatal(err)
		}
		rand.Read(buf)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%03d.py", i%100)), buf, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	return tree, int64(files) * fileSize
}

func (b *bench) syncFiles(tree string) int {
	n := 0
	filepath.WalkDir(tree, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}
