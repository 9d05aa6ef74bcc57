// Package hostkeys checks SSH server keys against known_hosts files the way
// OpenSSH does with StrictHostKeyChecking=yes, or accept-new when asked:
// hashed names, [host]:port, HostKeyAlias, @revoked, the key algorithms to
// ask a server for, and a malformed line skipped with a warning instead of
// failing the whole file. Refusals are *inventory.HostError values, worded
// for the user.
//
// Of tfhive it imports only probe/inventory and probe/localfile: it must
// not import the hosts configuration, the transport or the executors. It
// is handed an inventory.Host and gives back an ssh.HostKeyCallback.
package hostkeys

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/alessio/shellescape"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Checker checks server keys against known_hosts files. One value serves
// the whole run so that trust-on-first-use appends are serialised and seen
// by later connections.
type Checker struct {
	acceptNew bool
	warn      func(string) // called with k.mu held, so never concurrently
	added     func(string) // as warn: OpenSSH's "Permanently added" line
	mu        sync.Mutex
	appended  map[string]ssh.PublicKey // key-lookup name → key appended this run
	dbs       map[string]*khDB         // see database
	warned    map[string]bool
}

// New returns a Checker; acceptNew appends unknown keys to a host's first
// known_hosts file instead of refusing them (--accept-new-host-keys). warn
// receives what is wrong in a known_hosts file that is used anyway, one
// message per call, never two calls at once (nil: printed on stderr).
// added receives, the same way, OpenSSH's line for each key appended
// (AddedLine; nil: printed on stderr, as ssh prints it).
func New(acceptNew bool, warn, added func(string)) *Checker {
	if warn == nil {
		warn = func(msg string) { fmt.Fprintf(os.Stderr, "tfhive: warning: %s\n", msg) }
	}
	if added == nil {
		added = func(line string) { fmt.Fprintln(os.Stderr, line) }
	}
	return &Checker{acceptNew: acceptNew, warn: warn, added: added, appended: map[string]ssh.PublicKey{},
		dbs: map[string]*khDB{}, warned: map[string]bool{}}
}

// probeKey is a key no known_hosts file holds: checking it makes knownhosts
// list every key it does hold for a host, which is how we learn which host
// key algorithms to ask for.
var probeKey = func() ssh.PublicKey {
	pub, _, _ := ed25519.GenerateKey(nil)
	k, _ := ssh.NewPublicKey(pub)
	return k
}()

// lookupName is the name known_hosts is searched for: HostKeyAlias as
// written (OpenSSH never adds the port to it), else the address dialled,
// with the port in OpenSSH's [host]:port form when not 22.
func lookupName(h inventory.Host) string {
	if h.HostKeyAlias != "" {
		return net.JoinHostPort(h.HostKeyAlias, "22")
	}
	return net.JoinHostPort(h.Address, strconv.Itoa(h.Port))
}

// Check is how one host's key is checked.
type Check struct {
	// Callback refuses a key with an *inventory.HostError (host key
	// unknown, changed or revoked); x/crypto wraps it in handshake text,
	// so a dialler that reports it keeps it as the callback returns it.
	Callback ssh.HostKeyCallback
	// Algorithms are the host key algorithms to ask for: those of the known
	// keys. Pinning them matters: otherwise a server that prefers ed25519
	// while known_hosts holds its ecdsa key would look like a changed key.
	// Nil (no known key) leaves x/crypto's defaults.
	Algorithms []string
	// Known are the keys known_hosts holds for the host (or this run
	// added), to explain a server that offers none of their types
	// (NoCommonKeyType).
	Known []knownhosts.KnownKey
}

// For returns the check for h's key. An error means its known_hosts files
// cannot be read at all.
func (k *Checker) For(h inventory.Host) (*Check, error) {
	k.mu.Lock()
	check, err := k.database(h.KnownHostsFiles)
	k.mu.Unlock()
	if err != nil {
		return nil, err
	}
	db := func(string, net.Addr, ssh.PublicKey) error { return &knownhosts.KeyError{} }
	if check != nil {
		db = check
	}
	name := lookupName(h)
	dummy := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: h.Port}

	hc := &Check{}
	var ke *knownhosts.KeyError
	if err := db(name, dummy, probeKey); errors.As(err, &ke) {
		hc.Known = ke.Want
	}
	k.mu.Lock()
	if added, ok := k.appended[name]; ok {
		hc.Known = append(hc.Known, knownhosts.KnownKey{Key: added})
	}
	k.mu.Unlock()
	for _, kk := range hc.Known {
		hc.Algorithms = appendAlgos(hc.Algorithms, kk.Key.Type())
	}

	display := knownhosts.Normalize(name)
	cb := func(_ string, remote net.Addr, key ssh.PublicKey) error {
		err := db(name, remote, key)
		if err == nil {
			return nil
		}
		var rev *knownhosts.RevokedError
		if errors.As(err, &rev) {
			return &inventory.HostError{Kind: inventory.ErrHostKeyChanged,
				Message: fmt.Sprintf("host key is revoked (%s:%d)", rev.Revoked.Filename, rev.Revoked.Line)}
		}
		if !errors.As(err, &ke) {
			return err
		}
		if len(ke.Want) > 0 {
			w := ke.Want[0]
			return &inventory.HostError{Kind: inventory.ErrHostKeyChanged,
				Message: fmt.Sprintf("host key changed (%s:%d): the server sent %s %s, possible man-in-the-middle",
					w.Filename, w.Line, key.Type(), ssh.FingerprintSHA256(key)),
				Hint: fmt.Sprintf("if %s was reinstalled, remove the old key with `ssh-keygen -R %s` and check the new fingerprint", h.Name, shellescape.Quote(display))}
		}
		return k.unknown(h, name, key)
	}
	hc.Callback = cb
	return hc, nil
}

// unknown handles a host missing from known_hosts: refused unless
// --accept-new-host-keys, in which case it is appended, like OpenSSH's
// StrictHostKeyChecking=accept-new.
func (k *Checker) unknown(h inventory.Host, name string, key ssh.PublicKey) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if prev, ok := k.appended[name]; ok {
		if string(prev.Marshal()) == string(key.Marshal()) {
			return nil
		}
		return &inventory.HostError{Kind: inventory.ErrHostKeyChanged,
			Message: fmt.Sprintf("host key changed during this run: the server sent %s", ssh.FingerprintSHA256(key))}
	}
	if !k.acceptNew {
		return &inventory.HostError{Kind: inventory.ErrHostKeyUnknown,
			Message: fmt.Sprintf("host key unknown: %s %s is not in %s", key.Type(), ssh.FingerprintSHA256(key), strings.Join(h.KnownHostsFiles, " or ")),
			Hint:    "check the fingerprint, then rerun with --accept-new-host-keys (or `" + sshCommand(h) + "` once) to trust it"}
	}
	if len(h.KnownHostsFiles) == 0 {
		return &inventory.HostError{Kind: inventory.ErrHostKeyUnknown, Message: "host key unknown and no known_hosts file to add it to"}
	}
	file := h.KnownHostsFiles[0]
	if err := appendKnownHost(file, name, key); err != nil {
		return &inventory.HostError{Kind: inventory.ErrHostKeyUnknown, Message: fmt.Sprintf("cannot add host key to %s: %v", file, err)}
	}
	k.appended[name] = key
	k.added(AddedLine(name, key))
	return nil
}

// AddedLine is what OpenSSH prints for a key it appends to known_hosts
// (StrictHostKeyChecking=accept-new), word for word: the name as written
// there ('[10.0.0.5]:2222' off port 22) and the key's type as ssh names
// it (ED25519, ECDSA, RSA…).
func AddedLine(name string, key ssh.PublicKey) string {
	return fmt.Sprintf("Warning: Permanently added '%s' (%s) to the list of known hosts.", knownhosts.Normalize(name), keyTypeName(key.Type()))
}

// keyTypeName is OpenSSH's short name of a key type (sshkey_type()).
func keyTypeName(algo string) string {
	cert := strings.HasSuffix(algo, "-cert-v01@openssh.com")
	algo = strings.TrimSuffix(algo, "-cert-v01@openssh.com")
	var name string
	switch {
	case algo == ssh.KeyAlgoED25519:
		name = "ED25519"
	case algo == ssh.KeyAlgoRSA:
		name = "RSA"
	case algo == ssh.KeyAlgoDSA:
		name = "DSA"
	case strings.HasPrefix(algo, "ecdsa-sha2-"):
		name = "ECDSA"
	case strings.HasPrefix(algo, "sk-ssh-ed25519"):
		name = "ED25519-SK"
	case strings.HasPrefix(algo, "sk-ecdsa-sha2-"):
		name = "ECDSA-SK"
	default:
		return "unknown"
	}
	if cert {
		name += "-CERT"
	}
	return name
}

// sshCommand is the ssh command line that reaches h as tfhive does
// (hosts.Load sets it; a Host made otherwise gets its address and port).
func sshCommand(h inventory.Host) string {
	if h.SSH != "" {
		return h.SSH
	}
	if h.Port != 0 && h.Port != 22 {
		return "ssh -p " + strconv.Itoa(h.Port) + " " + shellescape.Quote(h.Address)
	}
	return "ssh " + shellescape.Quote(h.Address)
}

func appendKnownHost(file, name string, key ssh.PublicKey) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	// A hand-edited file may lack its final newline: do not glue our line
	// onto its last entry (which would make the whole file unparseable).
	line := knownhosts.Line([]string{knownhosts.Normalize(name)}, key) + "\n"
	if st, serr := f.Stat(); serr == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, rerr := f.ReadAt(last, st.Size()-1); rerr == nil && last[0] != '\n' {
			line = "\n" + line
		}
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// appendAlgos adds the signature algorithms a key type can be verified with.
func appendAlgos(algos []string, keyType string) []string {
	var add []string
	switch keyType {
	case ssh.KeyAlgoRSA:
		add = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	default:
		add = []string{keyType}
	}
	for _, a := range add {
		if !slices.Contains(algos, a) {
			algos = append(algos, a)
		}
	}
	return algos
}

// NoCommonKeyType explains a server that offers no key of the types
// known_hosts holds for it (x/crypto only says "no common algorithm for host
// key"): known is Check.Known, offered what the server offers. Refused like
// a changed key: the key that was trusted is not shown.
func NoCommonKeyType(h inventory.Host, known []knownhosts.KnownKey, offered []string) *inventory.HostError {
	var types, where []string
	for _, kk := range known {
		if t := kk.Key.Type(); !slices.Contains(types, t) {
			types = append(types, t)
		}
		if kk.Filename != "" {
			where = append(where, kk.Filename+":"+strconv.Itoa(kk.Line))
		}
	}
	msg := "known_hosts has " + strings.Join(types, ", ") + " for this host"
	if len(where) > 0 {
		msg += " (" + strings.Join(where, ", ") + ")"
	}
	msg += ", the server offers " + strings.Join(offered, ", ")
	keyscan := "ssh-keyscan " + shellescape.Quote(h.Address)
	if h.Port != 22 {
		keyscan = "ssh-keyscan -p " + strconv.Itoa(h.Port) + " " + shellescape.Quote(h.Address)
	}
	return &inventory.HostError{Kind: inventory.ErrHostKeyChanged, Message: msg,
		Hint: fmt.Sprintf("add its current key (`%s`, after checking the fingerprint) or remove the stale line (`ssh-keygen -R %s`)",
			keyscan, shellescape.Quote(knownhosts.Normalize(lookupName(h))))}
}
