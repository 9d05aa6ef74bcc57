// Package transport opens tfhive's SSH connections: one per host, through
// its jump hosts (shared between the hosts behind them), with public-key
// authentication from ssh-agent and identity files (never a prompt), host
// keys checked by probe/hostkeys, OpenSSH's keepalives and TCP_QUICKACK.
// Failures come back as *inventory.HostError, classified and worded for
// the user.
//
// It gives out *ssh.Client values and runs nothing on them: it must not
// import the executors (probe/remote) or the probe. Of tfhive it imports
// probe/inventory, probe/hosts (for the defaults), probe/hostkeys,
// probe/localfile and probe/wording.
package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/tfhive/tfhive/probe/hostkeys"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/probe/inventory"
)

// Options are the transport settings shared by every host of a run. The
// keepalive is per host (hosts.KeepAlive).
type Options struct {
	// ConnectTimeout bounds TCP connect and SSH handshake together.
	ConnectTimeout    time.Duration
	AcceptNewHostKeys bool
	AgentSocket       string
	// Warn receives problems tfhive works around, such as a malformed
	// known_hosts line that is skipped: one message per call, without the
	// "tfhive: warning: " prefix, never two calls at once. Nil prints them
	// on stderr with that prefix.
	Warn func(msg string)
	// Added receives, the same way, OpenSSH's line for each host key
	// --accept-new-host-keys appends ("Warning: Permanently added
	// '[10.0.0.5]:2222' (ED25519) to the list of known hosts."), to print
	// as ssh does unless quiet. Nil prints it on stderr.
	Added func(line string)
}

// SetDefaults fills in what o leaves unset.
func (o *Options) SetDefaults() {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = hosts.DefaultConnectTimeout
	}
}

// Dialer opens one SSH connection per host and shares jump-host
// connections between the hosts behind them.
type Dialer struct {
	opts  Options
	keys  *hostkeys.Checker
	auth  *keyring
	mu    sync.Mutex
	jumps map[string]*jumpConn
}

type jumpConn struct {
	once   sync.Once
	client *ssh.Client
	err    *inventory.HostError
}

// NewDialer returns a Dialer for one run.
func NewDialer(o Options) *Dialer {
	o.SetDefaults()
	return &Dialer{opts: o, keys: hostkeys.New(o.AcceptNewHostKeys, o.Warn, o.Added), auth: newKeyring(o.AgentSocket), jumps: map[string]*jumpConn{}}
}

// Dial connects to h (through its jump hosts). The caller closes the
// client; the jump connections stay open, shared, until Close.
func (d *Dialer) Dial(ctx context.Context, h inventory.Host) (*ssh.Client, *inventory.HostError) {
	var via *ssh.Client
	for i := range h.Via {
		c, herr := d.jump(ctx, h.Via[:i+1], via)
		if herr != nil {
			return nil, herr
		}
		via = c
	}
	return d.dialOne(ctx, h, via)
}

// jump returns the shared connection to the last hop of chain, dialled
// through prev.
func (d *Dialer) jump(ctx context.Context, chain []inventory.Host, prev *ssh.Client) (*ssh.Client, *inventory.HostError) {
	var key strings.Builder
	for _, hop := range chain {
		fmt.Fprintf(&key, "%s@%s:%d/", hop.User, hop.Address, hop.Port)
	}
	d.mu.Lock()
	jc, ok := d.jumps[key.String()]
	if !ok {
		jc = &jumpConn{}
		d.jumps[key.String()] = jc
	}
	d.mu.Unlock()
	hop := chain[len(chain)-1]
	jc.once.Do(func() {
		jc.client, jc.err = d.dialOne(ctx, hop, prev)
		if jc.err != nil {
			e := *jc.err
			e.Message = "jump host " + hop.Name + ": " + e.Message
			jc.err = &e
		}
	})
	return jc.client, jc.err
}

// Close closes the shared jump connections (each host's own connection is
// closed by whoever Dial gave it to).
func (d *Dialer) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, jc := range d.jumps {
		if jc.client != nil {
			jc.client.Close()
		}
	}
}

func (d *Dialer) dialOne(ctx context.Context, h inventory.Host, via *ssh.Client) (*ssh.Client, *inventory.HostError) {
	addr := net.JoinHostPort(h.Address, strconv.Itoa(h.Port))
	timeout := d.opts.ConnectTimeout
	hc, err := d.keys.For(h)
	if err != nil {
		if outOfDescriptors(err) {
			return nil, descriptorsError(err)
		}
		return nil, &inventory.HostError{Kind: inventory.ErrSSH, Message: err.Error()}
	}
	signers, tried := d.auth.authFor(h)
	var wantedPassword, triedKeys bool
	refusePrompt := func() (string, error) {
		wantedPassword = true
		return "", errors.New("password authentication is not used")
	}
	var hkErr *inventory.HostError
	cfg := &ssh.ClientConfig{
		User: h.User,
		Auth: []ssh.AuthMethod{
			ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
				triedKeys = true
				return signers, nil
			}),
			ssh.PasswordCallback(refusePrompt),
			ssh.KeyboardInteractive(func(string, string, []string, []bool) ([]string, error) {
				_, err := refusePrompt()
				return nil, err
			}),
		},
		HostKeyCallback: func(hostname string, remote net.Addr, key ssh.PublicKey) error {
			err := hc.Callback(hostname, remote, key)
			errors.As(err, &hkErr)
			return err
		},
		HostKeyAlgorithms: hc.Algorithms,
		Timeout:           timeout,
	}

	// One deadline for TCP and handshake: ssh.ClientConfig.Timeout covers
	// only the TCP part, and a server that accepts but never speaks would
	// otherwise hang us forever.
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var conn net.Conn
	if via != nil {
		conn, err = via.DialContext(dctx, "tcp", addr)
	} else {
		// TCP keepalives at SSH's default period, whatever the host's:
		// the kernel's check is a backstop, SSH's is the one that counts.
		conn, err = (&net.Dialer{KeepAlive: hosts.DefaultKeepAlive}).DialContext(dctx, "tcp", addr)
		if err == nil {
			conn = quickAck(conn)
		}
	}
	if err != nil {
		return nil, classifyDialError(err, h, timeout, dctx)
	}
	stop := context.AfterFunc(dctx, func() { conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if !stop() {
		if err == nil {
			c.Close()
		}
		if ctx.Err() != nil {
			return nil, &inventory.HostError{Kind: inventory.ErrTimeout, Message: "interrupted"}
		}
		return nil, &inventory.HostError{Kind: inventory.ErrTimeout, Message: fmt.Sprintf("ssh handshake timed out after %s (the server accepted TCP but did not complete SSH)", timeout)}
	}
	if err != nil {
		conn.Close()
		var negErr *ssh.AlgorithmNegotiationError
		switch {
		case hkErr != nil:
			return nil, hkErr
		case errors.As(err, &negErr) && negErr.What == "host key" && len(hc.Known) > 0:
			return nil, hostkeys.NoCommonKeyType(h, hc.Known, negErr.RequestedAlgorithms)
		case wantedPassword && !triedKeys:
			return nil, &inventory.HostError{Kind: inventory.ErrAuth, Message: fmt.Sprintf("authentication failed for user %s: the server accepts only passwords and tfhive never prompts (BatchMode)", h.User),
				Hint: "enable public key authentication on the host and install your key (ssh-copy-id)"}
		case wantedPassword || strings.Contains(err.Error(), "unable to authenticate"):
			return nil, &inventory.HostError{Kind: inventory.ErrAuth, Message: fmt.Sprintf("authentication failed for user %s (tried %s)", h.User, tried),
				Hint: "check the user name and that your public key is in the host's authorized_keys"}
		}
		return nil, &inventory.HostError{Kind: inventory.ErrSSH, Message: "ssh: " + strings.TrimPrefix(err.Error(), "ssh: ")}
	}
	client := ssh.NewClient(c, chans, reqs)
	every, max := hosts.KeepAlive(h)
	go keepAlive(client, every, max)
	return client, nil
}

func classifyDialError(err error, h inventory.Host, timeout time.Duration, ctx context.Context) *inventory.HostError {
	var dnsErr *net.DNSError
	switch {
	case outOfDescriptors(err):
		return descriptorsError(err)
	case errors.As(err, &dnsErr):
		return &inventory.HostError{Kind: inventory.ErrDNS, Message: fmt.Sprintf("cannot resolve %s", h.Address)}
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(strings.ToLower(err.Error()), "connection refused"):
		return &inventory.HostError{Kind: inventory.ErrRefused, Message: fmt.Sprintf("connection refused (%s port %d)", h.Address, h.Port),
			Hint: refusedHint(h.Port)}
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || isTimeout(err):
		return &inventory.HostError{Kind: inventory.ErrTimeout, Message: fmt.Sprintf("connect timed out after %s", timeout)}
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return &inventory.HostError{Kind: inventory.ErrRefused, Message: fmt.Sprintf("no route to %s", h.Address)}
	}
	return &inventory.HostError{Kind: inventory.ErrSSH, Message: err.Error()}
}

// refusedHint is what to check when a host refuses the connection. A
// small port other than 22 is most likely horovodrun's or MPICH's
// `-H host:N`, N slots, which here (as in ssh) is port N.
func refusedHint(port int) string {
	if port != 22 && port < 1024 {
		return fmt.Sprintf("is sshd running there, and is the port right? -H host:%d is port %d, as in ssh; "+
			"for %d GPUs there, use --hostfile with a line `host slots=%d`", port, port, port, port)
	}
	return "is sshd running there, and is the port right?"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// outOfDescriptors is an error of this process (EMFILE) or this machine
// (ENFILE) running out of file descriptors: no fault of the host's.
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

func descriptorsError(err error) *inventory.HostError {
	return &inventory.HostError{Kind: inventory.ErrDescriptors, Message: "out of file descriptors on this machine: " + err.Error()}
}
