package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/tfhive/tfhive/probe/hostkeys"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/localfile"
	"github.com/tfhive/tfhive/probe/wording"
)

// keyring gathers the keys tfhive may authenticate with: ssh-agent's first,
// then identity files. It never prompts (OpenSSH's BatchMode): a key that
// needs a passphrase must be in the agent. Files are read once per run, not
// once per host.
type keyring struct {
	agentSock string

	agentOnce    sync.Once
	agentSigners []ssh.Signer

	mu    sync.Mutex
	files map[string]fileKey
}

// maxIdentityFileSize caps an identity file (see localfile): a private key
// is a few KiB, even RSA 16384.
const maxIdentityFileSize = 1 << 20

type fileKey struct {
	signer ssh.Signer
	skip   string // why the file was not used, "" when it was
}

func newKeyring(agentSock string) *keyring {
	return &keyring{agentSock: agentSock, files: map[string]fileKey{}}
}

// agentKeys connects to the agent once; the connection is shared by every
// host (the agent client serialises requests itself).
func (k *keyring) agentKeys() []ssh.Signer {
	k.agentOnce.Do(func() {
		if k.agentSock == "" {
			return
		}
		conn, err := net.Dial("unix", k.agentSock)
		if err != nil {
			return
		}
		signers, err := agent.NewClient(conn).Signers()
		if err == nil {
			k.agentSigners = signers
		}
	})
	return k.agentSigners
}

// CheckLocalFiles refuses, before any host is dialled, the identity files
// and known_hosts files the hosts name that no dial could read: a FIFO or
// a device (an identity_file: /dev/zero), one over its cap. Each dial
// would otherwise fail on it alone, and the command report every host
// unreachable (exit 4) for what is the user's configuration (exit 2).
// Missing files are no error here: OpenSSH's defaults name files one may
// not have.
func CheckLocalFiles(hs []inventory.Host) error {
	seen := map[string]bool{}
	for _, h := range hs {
		if h.Local {
			continue
		}
		for _, path := range h.IdentityFiles {
			if seen[path] {
				continue
			}
			seen[path] = true
			if err := localfile.Check(path, maxIdentityFileSize); err != nil {
				return fmt.Errorf("%s: identity file %w", h.Name, localfile.Describe(err))
			}
		}
		key := strings.Join(h.KnownHostsFiles, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		if err := hostkeys.CheckFiles(h.KnownHostsFiles); err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
	}
	return nil
}

func (k *keyring) file(path string) fileKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	if fk, ok := k.files[path]; ok {
		return fk
	}
	var fk fileKey
	data, err := localfile.Read(path, maxIdentityFileSize)
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fk.skip = "missing"
	case errors.As(err, &pe):
		fk.skip = pe.Err.Error()
	case err != nil:
		fk.skip = err.Error()
	default:
		s, err := ssh.ParsePrivateKey(data)
		var pm *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &pm):
			fk.skip = "passphrase-protected and not in ssh-agent"
		case err != nil:
			fk.skip = "unreadable key: " + err.Error()
		default:
			fk.signer = s
		}
	}
	k.files[path] = fk
	return fk
}

// authFor returns the signers to offer a host and a description of what
// was tried, for the authentication-failed message.
func (k *keyring) authFor(h inventory.Host) ([]ssh.Signer, string) {
	signers := append([]ssh.Signer(nil), k.agentKeys()...)
	var tried, unusable, missing []string
	if n := len(signers); n > 0 {
		tried = append(tried, wording.Count(n, "key")+" from ssh-agent")
	}
	for _, path := range h.IdentityFiles {
		fk := k.file(path)
		switch {
		case fk.signer != nil:
			if !hasKey(signers, fk.signer.PublicKey()) {
				signers = append(signers, fk.signer)
			}
			tried = append(tried, path)
		case fk.skip != "missing":
			tried = append(tried, path+" ("+fk.skip+")")
			unusable = append(unusable, path+" ("+fk.skip+")")
		default:
			// A default key one does not have goes unmentioned, as in
			// OpenSSH; a key file named in the hosts file or ssh config
			// is worth a word (a typo in identity_file: looks like this).
			if !hosts.IsDefaultIdentity(path) {
				tried = append(tried, path+" (does not exist)")
			}
			missing = append(missing, path)
		}
	}
	if len(signers) > 0 {
		return signers, strings.Join(tried, ", ")
	}
	desc := append([]string{"no keys: ssh-agent has none"}, unusable...)
	switch len(missing) {
	case 0:
		if len(unusable) == 0 {
			desc = append(desc, "no identity file is set")
		}
	case 1:
		desc = append(desc, missing[0]+" does not exist")
	default:
		desc = append(desc, "none of "+strings.Join(missing, ", ")+" exists")
	}
	return nil, strings.Join(desc, ", ")
}

func hasKey(signers []ssh.Signer, pub ssh.PublicKey) bool {
	for _, s := range signers {
		if bytes.Equal(s.PublicKey().Marshal(), pub.Marshal()) {
			return true
		}
	}
	return false
}
