package transport

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/tfhive/tfhive/probe/internal/testfs"
	"github.com/tfhive/tfhive/probe/internal/testsshd"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/testkit"
)

func dialTest(t *testing.T, o Options, h inventory.Host) (*ssh.Client, *inventory.HostError) {
	t.Helper()
	d := NewDialer(o)
	t.Cleanup(d.Close)
	c, herr := d.Dial(context.Background(), h)
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, herr
}

func wantHostError(t *testing.T, herr *inventory.HostError, kind inventory.ErrorKind, msg, hint string) {
	t.Helper()
	if herr == nil {
		t.Fatalf("dial succeeded, want %s error %q", kind, msg)
	}
	if herr.Kind != kind || herr.Message != msg || herr.Hint != hint {
		t.Errorf("got  %s: %s (hint %q)\nwant %s: %s (hint %q)", herr.Kind, herr.Message, herr.Hint, kind, msg, hint)
	}
}

func TestDialHandshakeTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accept, never speak
			mu.Unlock()
		}
	}()
	h := inventory.Host{Name: "silent", Address: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, User: "me",
		KnownHostsFiles: []string{filepath.Join(t.TempDir(), "known_hosts")}}
	start := time.Now()
	_, herr := dialTest(t, Options{ConnectTimeout: 300 * time.Millisecond}, h)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("dial took %s with a 300ms timeout", d)
	}
	wantHostError(t, herr, inventory.ErrTimeout, "ssh handshake timed out after 300ms (the server accepted TCP but did not complete SSH)", "")
}

func TestDialRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	h := inventory.Host{Name: "down", Address: "127.0.0.1", Port: port, User: "me"}
	_, herr := dialTest(t, Options{ConnectTimeout: 2 * time.Second}, h)
	wantHostError(t, herr, inventory.ErrRefused, "connection refused (127.0.0.1 port "+strconv.Itoa(port)+")", "is sshd running there, and is the port right?")
}

func TestDialAuthFailureListsWhatWasTried(t *testing.T) {
	hostKey := testsshd.NewSigner(t, false)
	srv := testsshd.Start(t, &ssh.ServerConfig{
		PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
			return nil, os.ErrPermission
		},
	}, nil, hostKey)
	good, goodPriv := testsshd.ClientKey(t)
	locked, lockedPriv := testsshd.ClientKey(t)
	goodFile := testsshd.WriteKey(t, good, goodPriv, "")
	lockedFile := testsshd.WriteKey(t, locked, lockedPriv, "s3cret")
	garbage := testfs.WriteFile(t, t.TempDir(), "id_garbage", "not a key\n")
	missing := filepath.Join(t.TempDir(), "id_missing")

	h := srv.Host(srv.KnownHostsFor(t, hostKey.PublicKey()), missing, lockedFile, goodFile, garbage)
	_, herr := dialTest(t, Options{ConnectTimeout: 5 * time.Second}, h)
	wantHostError(t, herr, inventory.ErrAuth,
		"authentication failed for user me (tried "+missing+" (does not exist), "+lockedFile+" (passphrase-protected and not in ssh-agent), "+goodFile+", "+
			garbage+" (unreadable key: ssh: no key found))",
		"check the user name and that your public key is in the host's authorized_keys")
}

// With no key to offer, the message names every file looked at: a typo in
// identity_file: must not read as "no identity file exists".
func TestDialAuthNoKeys(t *testing.T) {
	hostKey := testsshd.NewSigner(t, false)
	srv := testsshd.Start(t, &ssh.ServerConfig{
		PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
			return nil, os.ErrPermission
		},
	}, nil, hostKey)
	kh := srv.KnownHostsFor(t, hostKey.PublicKey())
	dir := t.TempDir()
	typo := filepath.Join(dir, "id_typo")
	home := filepath.Join(dir, "home/.ssh")
	defaults := []string{filepath.Join(home, "id_ed25519"), filepath.Join(home, "id_ecdsa"), filepath.Join(home, "id_rsa")}
	locked, lockedPriv := testsshd.ClientKey(t)
	lockedFile := testsshd.WriteKey(t, locked, lockedPriv, "s3cret")
	tests := []struct {
		name  string
		files []string
		tried string
	}{
		{"identity_file missing", []string{typo},
			"no keys: ssh-agent has none, " + typo + " does not exist"},
		{"default keys missing", defaults,
			"no keys: ssh-agent has none, none of " + strings.Join(defaults, ", ") + " exists"},
		{"locked key and a missing one", []string{lockedFile, typo},
			"no keys: ssh-agent has none, " + lockedFile + " (passphrase-protected and not in ssh-agent), " + typo + " does not exist"},
		{"endless device", []string{"/dev/zero"},
			"no keys: ssh-agent has none, /dev/zero (not a regular file (a character device))"},
		{"no identity file at all", nil,
			"no keys: ssh-agent has none, no identity file is set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, herr := dialTest(t, Options{ConnectTimeout: 5 * time.Second}, srv.Host(kh, tt.files...))
			wantHostError(t, herr, inventory.ErrAuth,
				"authentication failed for user me (tried "+tt.tried+")",
				"check the user name and that your public key is in the host's authorized_keys")
		})
	}
}

// A key was offered: the default key files one does not have go
// unmentioned, as in OpenSSH, but a named one that is missing does not.
func TestDialAuthMissingIdentityBesideUsableKey(t *testing.T) {
	hostKey := testsshd.NewSigner(t, false)
	srv := testsshd.Start(t, &ssh.ServerConfig{
		PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
			return nil, os.ErrPermission
		},
	}, nil, hostKey)
	good, goodPriv := testsshd.ClientKey(t)
	goodFile := testsshd.WriteKey(t, good, goodPriv, "")
	dir := t.TempDir()
	typo := filepath.Join(dir, "id_typo")
	def := filepath.Join(dir, ".ssh/id_rsa")
	_, herr := dialTest(t, Options{ConnectTimeout: 5 * time.Second},
		srv.Host(srv.KnownHostsFor(t, hostKey.PublicKey()), goodFile, typo, def))
	wantHostError(t, herr, inventory.ErrAuth,
		"authentication failed for user me (tried "+goodFile+", "+typo+" (does not exist))",
		"check the user name and that your public key is in the host's authorized_keys")
}

func TestDialPasswordOnlyServer(t *testing.T) {
	hostKey := testsshd.NewSigner(t, false)
	srv := testsshd.Start(t, &ssh.ServerConfig{
		PasswordCallback: func(ssh.ConnMetadata, []byte) (*ssh.Permissions, error) {
			t.Error("tfhive sent a password")
			return nil, os.ErrPermission
		},
	}, nil, hostKey)
	good, goodPriv := testsshd.ClientKey(t)
	h := srv.Host(srv.KnownHostsFor(t, hostKey.PublicKey()), testsshd.WriteKey(t, good, goodPriv, ""))
	_, herr := dialTest(t, Options{ConnectTimeout: 5 * time.Second}, h)
	wantHostError(t, herr, inventory.ErrAuth,
		"authentication failed for user me: the server accepts only passwords and tfhive never prompts (BatchMode)",
		"enable public key authentication on the host and install your key (ssh-copy-id)")
}

// The server has ecdsa and ed25519 host keys, known_hosts holds only the
// ed25519 one, and x/crypto by default prefers ecdsa: the pinned algorithms
// make the server present the known key instead of looking changed.
func TestDialPinsKnownHostKeyAlgorithm(t *testing.T) {
	edKey, ecKey := testsshd.NewSigner(t, false), testsshd.NewSigner(t, true)
	good, goodPriv := testsshd.ClientKey(t)
	srv := testsshd.Start(t, &ssh.ServerConfig{PublicKeyCallback: testsshd.AcceptKey(good.PublicKey())}, nil, edKey, ecKey)
	h := srv.Host(srv.KnownHostsFor(t, edKey.PublicKey()), testsshd.WriteKey(t, good, goodPriv, ""))
	c, herr := dialTest(t, Options{ConnectTimeout: 5 * time.Second}, h)
	if herr != nil {
		t.Fatalf("dial: %s: %s", herr.Kind, herr.Message)
	}
	if c.User() != "me" {
		t.Errorf("user %q", c.User())
	}
}

func TestDialHostKeyErrors(t *testing.T) {
	hostKey, other := testsshd.NewSigner(t, false), testsshd.NewSigner(t, false)
	good, goodPriv := testsshd.ClientKey(t)
	srv := testsshd.Start(t, &ssh.ServerConfig{PublicKeyCallback: testsshd.AcceptKey(good.PublicKey())}, nil, hostKey)
	id := testsshd.WriteKey(t, good, goodPriv, "")

	t.Run("unknown", func(t *testing.T) {
		kh := filepath.Join(t.TempDir(), "known_hosts")
		_, herr := dialTest(t, Options{ConnectTimeout: 5 * time.Second}, srv.Host(kh, id))
		wantHostError(t, herr, inventory.ErrHostKeyUnknown,
			"host key unknown: ssh-ed25519 "+ssh.FingerprintSHA256(hostKey.PublicKey())+" is not in "+kh,
			"check the fingerprint, then rerun with --accept-new-host-keys (or `ssh -p "+strconv.Itoa(srv.Port)+" 127.0.0.1` once) to trust it")
	})
	t.Run("changed", func(t *testing.T) {
		kh := srv.KnownHostsFor(t, other.PublicKey())
		_, herr := dialTest(t, Options{ConnectTimeout: 5 * time.Second}, srv.Host(kh, id))
		wantHostError(t, herr, inventory.ErrHostKeyChanged,
			"host key changed ("+kh+":1): the server sent ssh-ed25519 "+ssh.FingerprintSHA256(hostKey.PublicKey())+", possible man-in-the-middle",
			"if fake was reinstalled, remove the old key with `ssh-keygen -R '[127.0.0.1]:"+strconv.Itoa(srv.Port)+"'` and check the new fingerprint")
	})
	t.Run("accept new", func(t *testing.T) {
		kh := filepath.Join(t.TempDir(), "known_hosts")
		var said []string
		added := func(line string) { said = append(said, line) }
		if _, herr := dialTest(t, Options{ConnectTimeout: 5 * time.Second, AcceptNewHostKeys: true, Added: added}, srv.Host(kh, id)); herr != nil {
			t.Fatalf("dial: %s", herr.Message)
		}
		want := "Warning: Permanently added '[127.0.0.1]:" + strconv.Itoa(srv.Port) + "' (ED25519) to the list of known hosts."
		if len(said) != 1 || said[0] != want {
			t.Errorf("said %q, want %q once", said, want)
		}
		if _, herr := dialTest(t, Options{ConnectTimeout: 5 * time.Second}, srv.Host(kh, id)); herr != nil {
			t.Fatalf("strict dial after accept-new: %s", herr.Message)
		}
	})
}

// known_hosts holds an ed25519 key for the host, the server has only an
// ecdsa one: x/crypto says "no common algorithm for host key"; tfhive says
// which types each side has and what to do.
func TestDialNoCommonHostKeyType(t *testing.T) {
	edKey, ecKey := testsshd.NewSigner(t, false), testsshd.NewSigner(t, true)
	good, goodPriv := testsshd.ClientKey(t)
	srv := testsshd.Start(t, &ssh.ServerConfig{PublicKeyCallback: testsshd.AcceptKey(good.PublicKey())}, nil, ecKey)
	kh := srv.KnownHostsFor(t, edKey.PublicKey())
	_, herr := dialTest(t, Options{ConnectTimeout: 5 * time.Second}, srv.Host(kh, testsshd.WriteKey(t, good, goodPriv, "")))
	port := strconv.Itoa(srv.Port)
	wantHostError(t, herr, inventory.ErrHostKeyChanged,
		"known_hosts has ssh-ed25519 for this host ("+kh+":1), the server offers ecdsa-sha2-nistp256",
		"add its current key (`ssh-keyscan -p "+port+" 127.0.0.1`, after checking the fingerprint) or remove the stale line (`ssh-keygen -R '[127.0.0.1]:"+port+"'`)")
}

// A malformed known_hosts line costs a warning through Options.Warn, not
// the connection.
func TestDialSkipsMalformedKnownHostsLine(t *testing.T) {
	hostKey := testsshd.NewSigner(t, false)
	good, goodPriv := testsshd.ClientKey(t)
	srv := testsshd.Start(t, &ssh.ServerConfig{PublicKeyCallback: testsshd.AcceptKey(good.PublicKey())}, nil, hostKey)
	kh := srv.KnownHostsFor(t, hostKey.PublicKey())
	data, _ := os.ReadFile(kh)
	testfs.WriteFile(t, filepath.Dir(kh), "known_hosts", "gpu09 ssh-ed25519 AAAA!!!!\n"+string(data))
	var w testkit.Warnings
	h := srv.Host(kh, testsshd.WriteKey(t, good, goodPriv, ""))
	d := NewDialer(Options{ConnectTimeout: 5 * time.Second, Warn: w.Add})
	defer d.Close()
	for range 2 {
		c, herr := d.Dial(context.Background(), h)
		if herr != nil {
			t.Fatalf("dial: %s: %s", herr.Kind, herr.Message)
		}
		c.Close()
	}
	want := []string{kh + ":1: the key is not valid base64 (illegal base64 data at input byte 4) (line skipped)"}
	if got := w.Take(); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings\n got: %q\nwant: %q", got, want)
	}
}

// Running out of file descriptors is this machine's fault, said as such,
// however deep the errno is wrapped.
func TestClassifyOutOfDescriptors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		err := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", errno)}
		he := classifyDialError(err, inventory.Host{Name: "h", Address: "h", Port: 22}, time.Second, context.Background())
		if he.Kind != inventory.ErrDescriptors || !strings.HasPrefix(he.Message, "out of file descriptors on this machine: ") {
			t.Errorf("%v: %+v", errno, he)
		}
	}
}

// -H host:4 is port 4 (as in ssh), not horovodrun's 4 slots: a refused
// small port says so and names --hostfile.
func TestDialRefusedSmallPortHintsSlots(t *testing.T) {
	h := inventory.Host{Name: "h1", Address: "127.0.0.1", Port: 4, User: "me"}
	herr := classifyDialError(syscall.ECONNREFUSED, h, time.Second, context.Background())
	wantHostError(t, herr, inventory.ErrRefused, "connection refused (127.0.0.1 port 4)",
		"is sshd running there, and is the port right? -H host:4 is port 4, as in ssh; for 4 GPUs there, use --hostfile with a line `host slots=4`")
	for _, port := range []int{22, 2222} {
		if got := refusedHint(port); got != "is sshd running there, and is the port right?" {
			t.Errorf("port %d: %q", port, got)
		}
	}
}
