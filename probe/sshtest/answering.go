package sshtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Answering hosts stand in for hundreds of hosts on a machine that cannot
// run hundreds of sshd (benchmark only): one x/crypto SSH server in this
// process per host, each on an address of its own (127.0.0.2 upwards,
// through 127.0.x.y) with a host key of its own, behind the same RTT
// proxy as the real fleet. A session's command is answered with what a
// real fake host of the test bed said to it: the first session of each
// command is passed through to a real sshd host (the source) and
// recorded; every later one, on any answering host, replays that
// recording. Their CPU is the crypto of the handshakes and nothing else,
// as when each host has CPUs of its own.
//
// A recording is the session's conversation in order: the client's
// stdin chunks and its EOF, the host's stdout and stderr chunks, the exit
// status. A replay walks it, waiting for the client wherever the client
// spoke in the recording (a probe's kept session waits for its stdin to
// close before it exits), and fails the session loudly when the client
// says something else. That is enough for every session whose stdin is
// the same from run to run (tfhive status, pdsh, parallel-ssh, ssh).
// It is not enough for tfhive run: a supervisor's stdin carries the run's
// id, ports and environment, and its output depends on them; replaying
// runs needs a supervisor that speaks the protocol, not a recording.
type answering struct {
	source *ssh.Client

	mu   sync.Mutex
	recs map[string]*recording // by command
}

// recording is one session's conversation with the source host.
type recording struct {
	done   chan struct{} // closed once events is complete
	events []event
	err    error
}

type eventKind int

const (
	evStdin eventKind = iota
	evStdinEOF
	evStdout
	evStderr
	evExit
)

type event struct {
	kind eventKind
	data []byte
	rc   uint32
}

// AnsweringHosts starts n answering hosts named PREFIX0000…, with rtt
// added by a proxy each (0: none), and the client files to reach them
// with strict host-key checking (Fleet.SSHConfig, KnownHosts, Env). The
// source is a real sshd host with profile src, started here.
func AnsweringHosts(t testing.TB, prefix string, n int, rtt time.Duration, src Profile) *Fleet {
	t.Helper()
	if n > 250*256 {
		t.Fatalf("sshtest: %d answering hosts: at most %d loopback addresses", n, 250*256)
	}
	srcFleet := Start(t, src)
	sh := srcFleet.Hosts[0]
	key, err := os.ReadFile(srcFleet.ClientKey)
	must(t, err)
	signer, err := ssh.ParsePrivateKey(key)
	must(t, err)
	port := sh.Port
	client, err := ssh.Dial("tcp", net.JoinHostPort(sh.Addr, itoa(port)), &ssh.ClientConfig{
		User: currentUser(), Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(sh.Key), Timeout: 20 * time.Second,
	})
	must(t, err)
	t.Cleanup(func() { client.Close() })
	a := &answering{source: client, recs: map[string]*recording{}}

	dir := t.TempDir()
	f := &Fleet{Dir: dir, Home: filepath.Join(dir, "home"), byName: map[string]*Host{}, answering: a}
	must(t, os.MkdirAll(f.Home, 0o700))
	f.ClientKey = filepath.Join(dir, "client_key")
	clientPub := writeKey(t, f.ClientKey)
	for i := range n {
		// 127.0.0.1 is the real fleet's; .0 and .255 of each /24 are
		// left alone.
		addr := fmt.Sprintf("127.0.%d.%d", (i+1)/254, (i+1)%254+1)
		h := &Host{Profile: Profile{Name: fmt.Sprintf("%s%04d", prefix, i), RTT: rtt}, Addr: addr,
			Dir: filepath.Join(dir, "hosts", fmt.Sprint(i)), answering: true}
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		must(t, err)
		hostSigner, err := ssh.NewSignerFromKey(priv)
		must(t, err)
		h.Key = hostSigner.PublicKey()
		cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(k.Marshal(), clientPub.Marshal()) {
				return nil, nil
			}
			return nil, fmt.Errorf("unknown key")
		}}
		cfg.AddHostKey(hostSigner)
		ln, err := net.Listen("tcp", addr+":0")
		if err != nil {
			t.Fatalf("sshtest: answering host on %s: %v (Linux routes all of 127.0.0.0/8 to loopback; this system does not)", addr, err)
		}
		h.ln, h.Port = ln, ln.Addr().(*net.TCPAddr).Port
		go a.serve(ln, cfg, h.Name)
		f.Hosts = append(f.Hosts, h)
		f.byName[h.Name] = h
	}
	t.Cleanup(f.Stop)
	for _, h := range f.Hosts {
		if h.RTT > 0 {
			h.Proxy = startProxy(t, h.Addr, h.Port, h.RTT/2)
		}
	}
	f.writeClientFiles(t)
	return f
}

func (a *answering) serve(ln net.Listener, cfg *ssh.ServerConfig, name string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			conn, chans, reqs, err := ssh.NewServerConn(c, cfg)
			if err != nil {
				c.Close()
				return
			}
			defer conn.Close()
			go ssh.DiscardRequests(reqs)
			for nc := range chans {
				if nc.ChannelType() != "session" {
					nc.Reject(ssh.UnknownChannelType, "sessions only")
					continue
				}
				ch, creqs, err := nc.Accept()
				if err != nil {
					continue
				}
				go a.session(ch, creqs, name)
			}
		}()
	}
}

// session answers one session: exec only (env requests are refused, as
// by an sshd without AcceptEnv).
func (a *answering) session(ch ssh.Channel, reqs <-chan *ssh.Request, name string) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			req.Reply(false, nil)
			continue
		}
		var p struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &p); err != nil {
			req.Reply(false, nil)
			return
		}
		req.Reply(true, nil)
		go ssh.DiscardRequests(reqs)
		a.mu.Lock()
		rec, ok := a.recs[p.Command]
		if !ok {
			rec = &recording{done: make(chan struct{})}
			a.recs[p.Command] = rec
		}
		a.mu.Unlock()
		if !ok {
			a.record(rec, ch, p.Command)
			return
		}
		<-rec.done
		replay(rec, ch, name)
		return
	}
}

// record passes one session through to the source host, keeping its
// conversation.
func (a *answering) record(rec *recording, ch ssh.Channel, cmd string) {
	defer close(rec.done)
	var mu sync.Mutex
	ended := false
	// What the client says after the exit status is not the
	// conversation's: a replay would wait for it after the session ended.
	add := func(e event) {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			rec.events = append(rec.events, e)
			ended = e.kind == evExit
		}
	}
	s, err := a.source.NewSession()
	if err != nil {
		rec.err = err
		fmt.Fprintf(ch.Stderr(), "sshtest: answering host: recording: %v\n", err)
		exit(ch, 255)
		return
	}
	defer s.Close()
	in, _ := s.StdinPipe()
	out, _ := s.StdoutPipe()
	errp, _ := s.StderrPipe()
	if err := s.Start(cmd); err != nil {
		rec.err = err
		exit(ch, 255)
		return
	}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := ch.Read(buf)
			if n > 0 {
				add(event{kind: evStdin, data: bytes.Clone(buf[:n])})
				in.Write(buf[:n])
			}
			if err != nil {
				add(event{kind: evStdinEOF})
				in.Close()
				return
			}
		}
	}()
	var wg sync.WaitGroup
	pass := func(kind eventKind, r io.Reader, w io.Writer) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				add(event{kind: kind, data: bytes.Clone(buf[:n])})
				w.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go pass(evStdout, out, ch)
	go pass(evStderr, errp, ch.Stderr())
	wg.Wait()
	rc := 255
	if err := s.Wait(); err == nil {
		rc = 0
	} else if ee, ok := err.(*ssh.ExitError); ok {
		rc = ee.ExitStatus()
	}
	add(event{kind: evExit, rc: uint32(rc)})
	mu.Lock()
	rec.events = coalesce(rec.events)
	for i, e := range rec.events {
		if e.kind == evStdout {
			rec.events[i].data = hostListening(e.data)
		}
	}
	mu.Unlock()
	exit(ch, uint32(rc))
}

// listeningLines is how many listening sockets a replayed probe reports:
// a GPU host's few dozen (sshd, an exporter, Jupyter, TensorBoard).
const listeningLines = 40

// hostListening cuts the listening sockets of a probe's output (its
// "@@tfhive-tcp" section, scripts/probe.sh) to listeningLines. The source
// host is this machine, whose listing holds every test host's sshd and
// proxy: thousands of lines with a thousand answering hosts, which every
// replay would make the client parse, and which no GPU host has.
func hostListening(data []byte) []byte {
	const start, end = "\n@@tfhive-tcp\n", "\n@@tfhive-"
	i := bytes.Index(data, []byte(start))
	if i < 0 {
		return data
	}
	body := i + len(start)
	j := bytes.Index(data[body:], []byte(end))
	if j < 0 {
		return data
	}
	section := data[body : body+j+1]
	k, n := 0, 0
	for n <= listeningLines && k < len(section) {
		nl := bytes.IndexByte(section[k:], '\n')
		if nl < 0 {
			break
		}
		k += nl + 1
		n++
	}
	out := append([]byte(nil), data[:body]...)
	out = append(out, section[:k]...)
	return append(out, data[body+j+1:]...)
}

// coalesce merges neighbouring output chunks of the same stream: a UUID
// cut in two by a read is one again, and a replay writes less often.
func coalesce(es []event) []event {
	var out []event
	for _, e := range es {
		if n := len(out); n > 0 && (e.kind == evStdout || e.kind == evStderr) && out[n-1].kind == e.kind {
			out[n-1].data = append(out[n-1].data, e.data...)
			continue
		}
		out = append(out, e)
	}
	return out
}

// replay answers a session from a recording. Output is sent as recorded
// (GPU UUIDs made the host's own: the product takes hosts with the same
// UUIDs for one machine); where the client spoke, it waits for the same
// words.
func replay(rec *recording, ch ssh.Channel, name string) {
	if rec.err != nil {
		fmt.Fprintf(ch.Stderr(), "sshtest: answering host: the recording failed: %v\n", rec.err)
		exit(ch, 255)
		return
	}
	var got []byte
	eof := false
	buf := make([]byte, 32<<10)
	// need reads from the client until it has sent want more bytes (or
	// its EOF, when want is nil).
	need := func(want []byte) bool {
		for len(got) < len(want) || want == nil && !eof {
			if eof {
				return false
			}
			n, err := ch.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				eof = true
			}
		}
		if want == nil {
			return len(got) == 0
		}
		ok := bytes.Equal(got[:len(want)], want)
		got = got[len(want):]
		return ok
	}
	for _, e := range rec.events {
		switch e.kind {
		case evStdin:
			if !need(e.data) {
				fmt.Fprintf(ch.Stderr(), "sshtest: answering host: stdin differs from the recording's\n")
				exit(ch, 255)
				return
			}
		case evStdinEOF:
			if !need(nil) {
				fmt.Fprintf(ch.Stderr(), "sshtest: answering host: stdin differs from the recording's\n")
				exit(ch, 255)
				return
			}
		case evStdout:
			ch.Write(ownUUIDs(e.data, name))
		case evStderr:
			ch.Stderr().Write(e.data)
		case evExit:
			exit(ch, e.rc)
		}
	}
}

func exit(ch ssh.Channel, rc uint32) {
	ch.CloseWrite()
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], rc)
	ch.SendRequest("exit-status", false, b[:])
}

var anyUUIDRE = regexp.MustCompile(`GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// ownUUIDs rewrites GPU UUIDs to ones derived from the host's name (the
// same for the same UUID, whatever chunk it is in).
func ownUUIDs(data []byte, name string) []byte {
	return anyUUIDRE.ReplaceAllFunc(data, func(b []byte) []byte {
		return []byte(fakeUUID(name + "\x00" + string(b)))
	})
}

// Recordings is how many distinct commands answering hosts have recorded
// from their source host (0 for a fleet of sshd).
func (f *Fleet) Recordings() int {
	if f.answering == nil {
		return 0
	}
	f.answering.mu.Lock()
	defer f.answering.mu.Unlock()
	return len(f.answering.recs)
}
