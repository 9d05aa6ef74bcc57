// Package testsshd is an in-process SSH server (x/crypto) on 127.0.0.1 for
// the transport's and the executors' tests, with the keys and files a
// client needs to reach it. For tests only; probe/sshtest runs real
// OpenSSH servers instead.
//
// Of tfhive it imports probe/inventory and probe/internal/testfs only.
package testsshd

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/tfhive/tfhive/probe/internal/testfs"
	"github.com/tfhive/tfhive/probe/inventory"
)

// Server is a server started by Start.
type Server struct {
	Port     int
	HostKeys []ssh.Signer
}

// NewSigner is a new ed25519 key, or an ecdsa P-256 one.
func NewSigner(t testing.TB, ecdsaKey bool) ssh.Signer {
	t.Helper()
	var priv any
	if ecdsaKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		priv = k
	} else {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		priv = k
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Start serves cfg (with the given host keys added) until the test ends,
// handing session channels to session (nil: refused).
func Start(t testing.TB, cfg *ssh.ServerConfig, session func(ssh.Channel, <-chan *ssh.Request), hostKeys ...ssh.Signer) *Server {
	t.Helper()
	for _, k := range hostKeys {
		cfg.AddHostKey(k)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
				if err != nil {
					return
				}
				go ssh.DiscardRequests(reqs)
				go func() {
					for nc := range chans {
						if session == nil || nc.ChannelType() != "session" {
							nc.Reject(ssh.Prohibited, "no sessions here")
							continue
						}
						ch, reqs, err := nc.Accept()
						if err == nil {
							go session(ch, reqs)
						}
					}
				}()
				sc.Wait()
			})
		}
	})
	return &Server{Port: ln.Addr().(*net.TCPAddr).Port, HostKeys: hostKeys}
}

// KnownHostsFor writes a known_hosts holding the given keys for the
// server's [127.0.0.1]:port.
func (s *Server) KnownHostsFor(t testing.TB, keys ...ssh.PublicKey) string {
	t.Helper()
	var b bytes.Buffer
	for _, k := range keys {
		b.WriteString(knownhosts.Line([]string{knownhosts.Normalize(net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))}, k) + "\n")
	}
	return testfs.WriteFile(t, t.TempDir(), "known_hosts", b.String())
}

// Host is the server as a host named "fake", user "me".
func (s *Server) Host(knownHosts string, identities ...string) inventory.Host {
	return inventory.Host{Name: "fake", Address: "127.0.0.1", Port: s.Port, User: "me",
		IdentityFiles: identities, KnownHostsFiles: []string{knownHosts}, ClusterAddress: "127.0.0.1"}
}

// WriteKey writes s's private key priv to a file, encrypted when
// passphrase is set, and returns its path.
func WriteKey(t testing.TB, s ssh.Signer, priv any, passphrase string) string {
	t.Helper()
	var block *pem.Block
	var err error
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	return testfs.WriteFile(t, t.TempDir(), "id_"+ssh.FingerprintSHA256(s.PublicKey())[7:15], string(pem.EncodeToMemory(block)))
}

// ClientKey is a new ed25519 client key and its private half.
func ClientKey(t testing.TB) (ssh.Signer, ed25519.PrivateKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, priv
}

// AcceptKey is a PublicKeyCallback accepting want only.
func AcceptKey(want ssh.PublicKey) func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
	return func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if bytes.Equal(k.Marshal(), want.Marshal()) {
			return nil, nil
		}
		return nil, os.ErrPermission
	}
}
