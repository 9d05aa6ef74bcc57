package transport

import (
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/tfhive/tfhive/probe/internal/testsshd"
)

// A host that stops answering keepalives is dropped every × max after its
// last answer: not before (a slow answer is no silence), and not a whole
// period later, as when the clock ran from the last request sent.
func TestKeepAliveDropsASilentLink(t *testing.T) {
	// TCP, not net.Pipe: both ends send their version line at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := &ssh.ServerConfig{NoClientAuth: true}
	cfg.AddHostKey(testsshd.NewSigner(t, false))
	var mu sync.Mutex
	var mute bool
	var lastAnswer time.Time
	answers := 0
	go func() {
		srvConn, err := ln.Accept()
		if err != nil {
			return
		}
		sc, chans, reqs, err := ssh.NewServerConn(srvConn, cfg)
		if err != nil {
			return
		}
		defer sc.Close()
		go func() {
			for nc := range chans {
				nc.Reject(ssh.Prohibited, "no")
			}
		}()
		for r := range reqs {
			mu.Lock()
			if !mute {
				r.Reply(true, nil)
				lastAnswer = time.Now()
				answers++
			}
			mu.Unlock()
		}
	}()
	cliConn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, chans, reqs, err := ssh.NewClientConn(cliConn, "pipe", &ssh.ClientConfig{User: "me", HostKeyCallback: ssh.InsecureIgnoreHostKey()})
	if err != nil {
		t.Fatal(err)
	}
	client := ssh.NewClient(c, chans, reqs)
	const every, max = 50 * time.Millisecond, 3
	go keepAlive(client, every, max)
	for {
		mu.Lock()
		n := answers
		if n >= 3 {
			mute = true
		}
		mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	waited := make(chan time.Time, 1)
	go func() { client.Wait(); waited <- time.Now() }()
	select {
	case closed := <-waited:
		mu.Lock()
		since := closed.Sub(lastAnswer)
		mu.Unlock()
		if since < every*max {
			t.Errorf("dropped %s after the last answer, before every × max = %s", since, every*max)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a silent link was never dropped")
	}
}
