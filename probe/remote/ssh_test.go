package remote

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/tfhive/tfhive/probe/internal/testsshd"
	"github.com/tfhive/tfhive/probe/testkit"
	"github.com/tfhive/tfhive/probe/transport"
)

// execServer answers sessions with do(cmd, ch), which returns the
// exit-status to send (-1: none) or the signal to send, or hold to never
// answer. Commands named "refused" are refused.
type execServer struct {
	do func(cmd string, ch ssh.Channel) (rc int, signal string, hold bool)
}

func (e *execServer) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	for req := range reqs {
		if req.Type != "exec" {
			req.Reply(false, nil)
			continue
		}
		var x struct{ Command string }
		ssh.Unmarshal(req.Payload, &x)
		req.Reply(x.Command != "refused", nil)
		if x.Command == "refused" {
			continue
		}
		go func() {
			rc, sig, hold := e.do(x.Command, ch)
			if hold {
				return // never answers, never closes
			}
			switch {
			case sig != "":
				ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
					Signal     string
					CoreDumped bool
					Error      string
					Lang       string
				}{Signal: sig}))
			case rc >= 0:
				var b [4]byte
				binary.BigEndian.PutUint32(b[:], uint32(rc))
				ch.SendRequest("exit-status", false, b[:])
			}
			ch.Close()
		}()
	}
}

func execConn(t *testing.T, e *execServer) *SSH {
	t.Helper()
	hostKey := testsshd.NewSigner(t, false)
	good, goodPriv := testsshd.ClientKey(t)
	srv := testsshd.Start(t, &ssh.ServerConfig{PublicKeyCallback: testsshd.AcceptKey(good.PublicKey())}, e.session, hostKey)
	d := transport.NewDialer(transport.Options{ConnectTimeout: 5 * time.Second})
	t.Cleanup(d.Close)
	c, herr := Dial(context.Background(), d, srv.Host(srv.KnownHostsFor(t, hostKey.PublicKey()), testsshd.WriteKey(t, good, goodPriv, "")))
	if herr != nil {
		t.Fatalf("dial: %s", herr.Message)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Stdin reaches the command whole and in order; output larger than the
// copy buffers arrives whole; a refused exec is an error.
func TestSSHStartStdinAndOutput(t *testing.T) {
	e := &execServer{do: func(cmd string, ch ssh.Channel) (int, string, bool) {
		data, _ := io.ReadAll(ch)
		ch.Write(bytes.ToUpper(data))
		io.WriteString(ch.Stderr(), "ran "+cmd)
		return 3, "", false
	}}
	c := execConn(t, e)
	in := strings.Repeat("line of input\n", 20000) // 280 KB: many packets, many buffer fills
	var out, errb bytes.Buffer
	rc, err := c.Run(context.Background(), "sh -s", strings.NewReader(in), &out, &errb)
	if err != nil || rc != 3 {
		t.Fatalf("rc %d, err %v", rc, err)
	}
	if out.String() != strings.ToUpper(in) {
		t.Errorf("stdout: %d bytes, want %d, upper-cased", out.Len(), len(in))
	}
	if errb.String() != "ran sh -s" {
		t.Errorf("stderr %q", errb.String())
	}
	if _, err := c.Start(context.Background(), "refused", nil, nil); err == nil || !strings.Contains(err.Error(), "sshd refused to run the command") {
		t.Errorf("refused exec: %v", err)
	}
}

func TestSSHStartExitSignalAndMissingStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rc      int
		sig     string
		want    int
		wantErr string
	}{
		{"status", 0, "", 0, ""},
		{"signal", -1, "TERM", 128 + 15, ""},
		{"none", -1, "", -1, "connection lost before the command finished"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := execConn(t, &execServer{do: func(string, ssh.Channel) (int, string, bool) { return tc.rc, tc.sig, false }})
			rc, err := c.Run(context.Background(), "x", nil, nil, nil)
			if rc != tc.want || (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
				t.Errorf("rc %d err %v, want %d %q", rc, err, tc.want, tc.wantErr)
			}
		})
	}
}

// A command that never ends and cannot be stopped (sshd confirms a closed
// session only when its command has exited) does not hold Wait after
// Close; the output it still sends goes nowhere.
func TestSSHCloseAbandonsAHungCommand(t *testing.T) {
	started := make(chan ssh.Channel, 1)
	c := execConn(t, &execServer{do: func(_ string, ch ssh.Channel) (int, string, bool) {
		io.WriteString(ch, "hello\n")
		started <- ch
		return 0, "", true
	}})
	var out testkit.SyncBuffer
	p, err := c.Start(context.Background(), "hang", &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch := <-started
	for !strings.Contains(out.String(), "hello") {
		time.Sleep(10 * time.Millisecond)
	}
	waited := make(chan error, 1)
	go func() { _, err := p.Wait(); waited <- err }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned before Close: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	p.Close()
	if err := <-waited; err == nil || !strings.Contains(err.Error(), "abandoned") {
		t.Errorf("Wait after Close: %v", err)
	}
	io.WriteString(ch, "late\n")
	ch.Close()
	p.(*sshProcess).copies.Wait() // the late output has been read
	if strings.Contains(out.String(), "late") {
		t.Errorf("output after Wait returned was written: %q", out.String())
	}
}

// Stdin writers on several goroutines and Kill may meet (the launcher's
// control lines race a lost supervisor's kill): no data race (CI runs
// -race), and Kill returns even while a writer is stuck on a full window.
func TestSSHStdinWritersAndKill(t *testing.T) {
	c := execConn(t, &execServer{do: func(string, ssh.Channel) (int, string, bool) {
		return 0, "", true // never reads its stdin
	}})
	p, err := c.Start(context.Background(), "deaf", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 32<<10)
	var writers sync.WaitGroup
	for range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for range 128 { // 4 × 4 MiB: beyond the 2 MiB window
				if _, err := p.Stdin().Write(big); err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let the window fill; either way Kill must return
	killed := make(chan struct{})
	go func() { p.Kill(); close(killed) }()
	select {
	case <-killed:
	case <-time.After(5 * time.Second):
		t.Fatal("Kill hung behind a blocked stdin writer")
	}
	if rc, err := p.Wait(); err == nil { // abandoned, or closed without a status
		t.Errorf("Wait after Kill: rc %d, no error", rc)
	}
	p.Stdin().Close()
	c.Close() // releases the blocked writers
	writers.Wait()
}
