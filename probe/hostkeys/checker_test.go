package hostkeys_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/tfhive/tfhive/probe/hostkeys"
	"github.com/tfhive/tfhive/probe/internal/testfs"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/testkit"
)

var (
	testKeysOnce sync.Once
	testKeys     struct{ ed, ed2, ecdsa, rsa ssh.PublicKey }
)

func hostTestKeys(t *testing.T) (ed, ed2, ec, rs ssh.PublicKey) {
	t.Helper()
	testKeysOnce.Do(func() {
		mk := func(pub any, err error) ssh.PublicKey {
			if err != nil {
				panic(err)
			}
			k, err := ssh.NewPublicKey(pub)
			if err != nil {
				panic(err)
			}
			return k
		}
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		testKeys.ed = mk(pub, err)
		pub, _, err = ed25519.GenerateKey(rand.Reader)
		testKeys.ed2 = mk(pub, err)
		ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		testKeys.ecdsa = mk(&ecKey.PublicKey, err)
		rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
		testKeys.rsa = mk(&rsaKey.PublicKey, err)
	})
	return testKeys.ed, testKeys.ed2, testKeys.ecdsa, testKeys.rsa
}

func khLine(name string, key ssh.PublicKey) string {
	return knownhosts.Line([]string{name}, key) + "\n"
}

var remoteAddr = &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 22}

// checkKey runs the callback For returns, as the SSH handshake would.
func checkKey(t *testing.T, k *hostkeys.Checker, h inventory.Host, key ssh.PublicKey) (algos []string, err error) {
	t.Helper()
	hc, err := k.For(h)
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	return hc.Algorithms, hc.Callback(net.JoinHostPort(h.Address, strconv.Itoa(h.Port)), remoteAddr, key)
}

// noWarnings fails the test on any warning.
func noWarnings(t *testing.T) func(string) {
	return func(msg string) { t.Errorf("unexpected warning: %s", msg) }
}

func wantHostKeyError(t *testing.T, err error, kind inventory.ErrorKind, msg, hint string) {
	t.Helper()
	var he *inventory.HostError
	if !errors.As(err, &he) {
		t.Fatalf("error %v (%T), want a *inventory.HostError", err, err)
	}
	if he.Kind != kind {
		t.Errorf("kind = %s, want %s", he.Kind, kind)
	}
	if he.Message != msg {
		t.Errorf("message\n got: %s\nwant: %s", he.Message, msg)
	}
	if he.Hint != hint {
		t.Errorf("hint\n got: %s\nwant: %s", he.Hint, hint)
	}
}

func TestHostKeysAccept(t *testing.T) {
	ed, ed2, ec, rs := hostTestKeys(t)
	hashed := knownhosts.HashHostname("gpu01")
	tests := []struct {
		name  string
		kh    string
		host  inventory.Host
		key   ssh.PublicKey
		algos []string
	}{
		{name: "plain", kh: khLine("gpu01", ed),
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed, algos: []string{"ssh-ed25519"}},
		{name: "among others", kh: khLine("gpu00", ed2) + "# comment\n\n" + khLine("gpu01", ed) + khLine("gpu02", ed2),
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed, algos: []string{"ssh-ed25519"}},
		{name: "several names on one line", kh: knownhosts.Line([]string{"gpu01", "10.1.2.3"}, ed) + "\n",
			host: inventory.Host{Name: "x", Address: "10.1.2.3", Port: 22}, key: ed, algos: []string{"ssh-ed25519"}},
		{name: "hashed", kh: knownhosts.Line([]string{hashed}, ed) + "\n",
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed, algos: []string{"ssh-ed25519"}},
		{name: "hashed non-22 port", kh: knownhosts.Line([]string{knownhosts.HashHostname("[gpu01]:2222")}, ed) + "\n",
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 2222}, key: ed, algos: []string{"ssh-ed25519"}},
		{name: "[host]:port", kh: khLine("gpu01", ed2) + khLine("[gpu01]:2222", ed),
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 2222}, key: ed, algos: []string{"ssh-ed25519"}},
		{name: "looked up by the address dialled", kh: khLine("10.1.2.3", ed),
			host: inventory.Host{Name: "gpu01", Address: "10.1.2.3", Port: 22}, key: ed, algos: []string{"ssh-ed25519"}},
		{name: "IPv6", kh: khLine("::1", ed),
			host: inventory.Host{Name: "::1", Address: "::1", Port: 22}, key: ed, algos: []string{"ssh-ed25519"}},
		{name: "IPv6 non-22 port", kh: khLine("[::1]:2222", ed),
			host: inventory.Host{Name: "::1", Address: "::1", Port: 2222}, key: ed, algos: []string{"ssh-ed25519"}},
		{name: "HostKeyAlias", kh: khLine("10.1.2.3", ed2) + khLine("gpu01-key", ed),
			host: inventory.Host{Name: "gpu01", Address: "10.1.2.3", Port: 22, HostKeyAlias: "gpu01-key"}, key: ed, algos: []string{"ssh-ed25519"}},
		// OpenSSH looks HostKeyAlias up as written, never as [alias]:port.
		{name: "HostKeyAlias non-22 port", kh: khLine("gpu01-key", ed),
			host: inventory.Host{Name: "gpu01", Address: "127.0.0.1", Port: 2222, HostKeyAlias: "gpu01-key"}, key: ed, algos: []string{"ssh-ed25519"}},
		{name: "ecdsa pins ecdsa", kh: khLine("gpu01", ec),
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ec, algos: []string{"ecdsa-sha2-nistp256"}},
		{name: "rsa pins rsa-sha2", kh: khLine("gpu01", rs),
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: rs, algos: []string{"rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"}},
		{name: "several known keys", kh: khLine("gpu01", rs) + khLine("other", ec) + khLine("gpu01", ed),
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed, algos: []string{"rsa-sha2-512", "rsa-sha2-256", "ssh-rsa", "ssh-ed25519"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := testfs.WriteFile(t, dir, "known_hosts", tt.kh)
			h := tt.host
			h.KnownHostsFiles = []string{filepath.Join(dir, "missing"), file, filepath.Join(dir, "also/missing")}
			algos, err := checkKey(t, hostkeys.New(false, noWarnings(t), nil), h, tt.key)
			if err != nil {
				t.Fatalf("key refused: %v", err)
			}
			if !reflect.DeepEqual(algos, tt.algos) {
				t.Errorf("algos = %q, want %q", algos, tt.algos)
			}
		})
	}
}

func TestHostKeysRefuse(t *testing.T) {
	ed, ed2, ec, _ := hostTestKeys(t)
	unknownHint := "check the fingerprint, then rerun with --accept-new-host-keys (or `ssh gpu01` once) to trust it"
	tests := []struct {
		name      string
		kh        string // "" : no known_hosts file at all
		host      inventory.Host
		key       ssh.PublicKey
		kind      inventory.ErrorKind
		msg, hint string // FILE stands for the known_hosts file, MISSING for a missing one
		wantAlgos []string
	}{
		{name: "no known_hosts file", kh: "",
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed, kind: inventory.ErrHostKeyUnknown,
			msg:  "host key unknown: ssh-ed25519 " + ssh.FingerprintSHA256(ed) + " is not in FILE or MISSING",
			hint: unknownHint},
		{name: "other hosts only", kh: khLine("gpu02", ed),
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed, kind: inventory.ErrHostKeyUnknown,
			msg:  "host key unknown: ssh-ed25519 " + ssh.FingerprintSHA256(ed) + " is not in FILE or MISSING",
			hint: unknownHint},
		{name: "plain entry does not cover port 2222", kh: khLine("gpu01", ed),
			host: inventory.Host{Name: "gpu01:2222", Address: "gpu01", Port: 2222}, key: ed, kind: inventory.ErrHostKeyUnknown,
			msg:  "host key unknown: ssh-ed25519 " + ssh.FingerprintSHA256(ed) + " is not in FILE or MISSING",
			hint: "check the fingerprint, then rerun with --accept-new-host-keys (or `ssh -p 2222 gpu01` once) to trust it"},
		{name: "name entry does not cover the HostName", kh: khLine("gpu01", ed),
			host: inventory.Host{Name: "gpu01", Address: "10.1.2.3", Port: 22, SSH: "ssh gpu01"}, key: ed, kind: inventory.ErrHostKeyUnknown,
			msg:  "host key unknown: ssh-ed25519 " + ssh.FingerprintSHA256(ed) + " is not in FILE or MISSING",
			hint: unknownHint},
		// The hint's command is the one hosts.Load made: ssh config, port, user.
		{name: "the host's ssh command", kh: khLine("gpu01", ed),
			host: inventory.Host{Name: "lab", Address: "127.0.0.11", Port: 50729, SSH: "ssh -F /lab/cfg -p 50729 bob@127.0.0.11"}, key: ed,
			kind: inventory.ErrHostKeyUnknown,
			msg:  "host key unknown: ssh-ed25519 " + ssh.FingerprintSHA256(ed) + " is not in FILE or MISSING",
			hint: "check the fingerprint, then rerun with --accept-new-host-keys (or `ssh -F /lab/cfg -p 50729 bob@127.0.0.11` once) to trust it"},
		{name: "changed", kh: khLine("gpu00", ed2) + khLine("gpu01", ed),
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed2, kind: inventory.ErrHostKeyChanged,
			msg:       "host key changed (FILE:2): the server sent ssh-ed25519 " + ssh.FingerprintSHA256(ed2) + ", possible man-in-the-middle",
			hint:      "if gpu01 was reinstalled, remove the old key with `ssh-keygen -R gpu01` and check the new fingerprint",
			wantAlgos: []string{"ssh-ed25519"}},
		{name: "changed on a non-22 port", kh: "\n" + khLine("[gpu01]:2222", ed),
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 2222}, key: ed2, kind: inventory.ErrHostKeyChanged,
			msg:       "host key changed (FILE:2): the server sent ssh-ed25519 " + ssh.FingerprintSHA256(ed2) + ", possible man-in-the-middle",
			hint:      "if gpu01 was reinstalled, remove the old key with `ssh-keygen -R '[gpu01]:2222'` and check the new fingerprint",
			wantAlgos: []string{"ssh-ed25519"}},
		{name: "changed, other type", kh: khLine("gpu01", ec),
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed, kind: inventory.ErrHostKeyChanged,
			msg:       "host key changed (FILE:1): the server sent ssh-ed25519 " + ssh.FingerprintSHA256(ed) + ", possible man-in-the-middle",
			hint:      "if gpu01 was reinstalled, remove the old key with `ssh-keygen -R gpu01` and check the new fingerprint",
			wantAlgos: []string{"ecdsa-sha2-nistp256"}},
		{name: "changed under HostKeyAlias", kh: khLine("gpu01-key", ed),
			host: inventory.Host{Name: "gpu01", Address: "10.1.2.3", Port: 22, HostKeyAlias: "gpu01-key"}, key: ed2, kind: inventory.ErrHostKeyChanged,
			msg:       "host key changed (FILE:1): the server sent ssh-ed25519 " + ssh.FingerprintSHA256(ed2) + ", possible man-in-the-middle",
			hint:      "if gpu01 was reinstalled, remove the old key with `ssh-keygen -R gpu01-key` and check the new fingerprint",
			wantAlgos: []string{"ssh-ed25519"}},
		{name: "revoked", kh: khLine("gpu01", ed) + "@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(ed))) + "\n",
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed, kind: inventory.ErrHostKeyChanged,
			msg:       "host key is revoked (FILE:2)",
			wantAlgos: []string{"ssh-ed25519"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "known_hosts")
			missing := filepath.Join(dir, "missing")
			if tt.kh != "" {
				testfs.WriteFile(t, dir, "known_hosts", tt.kh)
			}
			h := tt.host
			h.KnownHostsFiles = []string{file, missing}
			before, _ := os.ReadFile(file)
			algos, err := checkKey(t, hostkeys.New(false, noWarnings(t), nil), h, tt.key)
			if err == nil {
				t.Fatal("key accepted")
			}
			r := strings.NewReplacer("FILE", file, "MISSING", missing)
			wantHostKeyError(t, err, tt.kind, r.Replace(tt.msg), tt.hint)
			if !reflect.DeepEqual(algos, tt.wantAlgos) {
				t.Errorf("algos = %q, want %q", algos, tt.wantAlgos)
			}
			after, _ := os.ReadFile(file)
			if string(before) != string(after) {
				t.Errorf("known_hosts modified without --accept-new-host-keys:\n%s", after)
			}
		})
	}
}

func TestHostKeysAcceptNew(t *testing.T) {
	ed, ed2, ec, rs := hostTestKeys(t)
	tests := []struct {
		name     string
		existing string // "" : no file (nor directory) yet
		host     inventory.Host
		key      ssh.PublicKey
		line     string // the line appended
		said     string // OpenSSH's line saying so
	}{
		{name: "creates file and directory", host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed,
			line: khLine("gpu01", ed), said: "Warning: Permanently added 'gpu01' (ED25519) to the list of known hosts."},
		{name: "appends", existing: khLine("gpu00", ed2), host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed,
			line: khLine("gpu01", ed), said: "Warning: Permanently added 'gpu01' (ED25519) to the list of known hosts."},
		{name: "non-22 port", existing: khLine("gpu01", ed2), host: inventory.Host{Name: "gpu01:2222", Address: "gpu01", Port: 2222}, key: rs,
			line: khLine("[gpu01]:2222", rs), said: "Warning: Permanently added '[gpu01]:2222' (RSA) to the list of known hosts."},
		{name: "ECDSA, an address", host: inventory.Host{Name: "10.1.2.3:2200", Address: "10.1.2.3", Port: 2200}, key: ec,
			line: khLine("[10.1.2.3]:2200", ec), said: "Warning: Permanently added '[10.1.2.3]:2200' (ECDSA) to the list of known hosts."},
		{name: "HostKeyAlias", host: inventory.Host{Name: "gpu01", Address: "10.1.2.3", Port: 22, HostKeyAlias: "gpu01-key"}, key: ed,
			line: khLine("gpu01-key", ed), said: "Warning: Permanently added 'gpu01-key' (ED25519) to the list of known hosts."},
		// A hand-edited file often lacks its final newline: the new entry
		// must not be glued to the last one.
		{name: "file without final newline", existing: strings.TrimSuffix(khLine("gpu00", ed2), "\n"),
			host: inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22}, key: ed, line: "\n" + khLine("gpu01", ed),
			said: "Warning: Permanently added 'gpu01' (ED25519) to the list of known hosts."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "dot-ssh")
			file := filepath.Join(dir, "known_hosts")
			if tt.existing != "" {
				testfs.WriteFile(t, dir, "known_hosts", tt.existing)
			}
			h := tt.host
			h.KnownHostsFiles = []string{file, filepath.Join(dir, "global")}
			var said []string
			k := hostkeys.New(true, noWarnings(t), func(line string) { said = append(said, line) })
			if _, err := checkKey(t, k, h, tt.key); err != nil {
				t.Fatalf("accept-new refused a new key: %v", err)
			}
			if len(said) != 1 || said[0] != tt.said {
				t.Errorf("said %q, want %q once", said, tt.said)
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.existing + tt.line; string(got) != want {
				t.Errorf("known_hosts is\n%q\nwant\n%q", got, want)
			}

			// The same key again in this run, and in a later strict run.
			if _, err := checkKey(t, k, h, tt.key); err != nil {
				t.Errorf("same key refused later in the same run: %v", err)
			}
			if _, err := checkKey(t, hostkeys.New(false, noWarnings(t), nil), h, tt.key); err != nil {
				t.Errorf("a fresh strict check refuses the appended key: %v", err)
			}
			// Earlier entries still readable.
			if tt.existing != "" {
				prev := inventory.Host{Name: "gpu00", Address: "gpu00", Port: 22, KnownHostsFiles: []string{file}}
				if tt.host.Port == 2222 {
					prev = inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22, KnownHostsFiles: []string{file}}
				}
				if _, err := checkKey(t, hostkeys.New(false, noWarnings(t), nil), prev, ed2); err != nil {
					t.Errorf("existing entry broken by the append: %v", err)
				}
			}

			// Another unknown key for the same name in the same run: refused,
			// and nothing more is written.
			other := ed2
			if string(tt.key.Marshal()) == string(ed2.Marshal()) {
				other = ed
			}
			_, err = checkKey(t, k, h, other)
			// The appended key is now in the file, so a fresh config sees a
			// changed key (file:line); a stale one sees the in-run record.
			var he *inventory.HostError
			if !errors.As(err, &he) || he.Kind != inventory.ErrHostKeyChanged {
				t.Errorf("second key for %s: %v, want a host-key-changed error", h.Name, err)
			}
			got2, _ := os.ReadFile(file)
			if string(got2) != string(got) {
				t.Errorf("second key appended too:\n%s", got2)
			}
			if len(said) != 1 {
				t.Errorf("said %q, want one line: the key was added once", said)
			}
		})
	}
}

// Two connections to one new host in the same run, checked with callbacks
// made before either key was added (as parallel dials do): the first key is
// added, a different second one is refused, the same one accepted.
func TestHostKeysAcceptNewSameRun(t *testing.T) {
	ed, ed2, _, _ := hostTestKeys(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "known_hosts")
	h := inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22, KnownHostsFiles: []string{file}}
	k := hostkeys.New(true, noWarnings(t), func(string) {})
	var cbs []ssh.HostKeyCallback
	for range 3 {
		hc, err := k.For(h)
		if err != nil {
			t.Fatal(err)
		}
		if hc.Algorithms != nil {
			t.Fatalf("algos = %q before any key is known, want nil (library default)", hc.Algorithms)
		}
		cbs = append(cbs, hc.Callback)
	}
	if err := cbs[0]("gpu01:22", remoteAddr, ed); err != nil {
		t.Fatalf("first key refused: %v", err)
	}
	err := cbs[1]("gpu01:22", remoteAddr, ed2)
	wantHostKeyError(t, err, inventory.ErrHostKeyChanged, "host key changed during this run: the server sent "+ssh.FingerprintSHA256(ed2), "")
	if err := cbs[2]("gpu01:22", remoteAddr, ed); err != nil {
		t.Errorf("first key refused the second time: %v", err)
	}
	data, _ := os.ReadFile(file)
	if want := khLine("gpu01", ed); string(data) != want {
		t.Errorf("known_hosts = %q, want exactly %q", data, want)
	}
	// A config made after the append pins the algorithm of the added key.
	hc, _ := k.For(h)
	if want := []string{"ssh-ed25519"}; !reflect.DeepEqual(hc.Algorithms, want) {
		t.Errorf("algos after accept-new = %q, want %q", hc.Algorithms, want)
	}
}

func TestHostKeysAcceptNewConcurrent(t *testing.T) {
	ed, _, _, _ := hostTestKeys(t)
	file := filepath.Join(t.TempDir(), "known_hosts")
	h := inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22, KnownHostsFiles: []string{file}}
	var said []string // called under the checker's lock
	k := hostkeys.New(true, noWarnings(t), func(line string) { said = append(said, line) })
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			hc, err := k.For(h)
			if err == nil {
				err = hc.Callback("gpu01:22", remoteAddr, ed)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	data, _ := os.ReadFile(file)
	if want := khLine("gpu01", ed); string(data) != want {
		t.Errorf("known_hosts = %q, want the key once", data)
	}
	if len(said) != 1 {
		t.Errorf("said %q, want one Permanently added line", said)
	}
}

func TestHostKeysAcceptNewUnwritable(t *testing.T) {
	ed, _, _, _ := hostTestKeys(t)
	dir := t.TempDir()
	blocker := testfs.WriteFile(t, dir, "not-a-dir", "")
	h := inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22, KnownHostsFiles: []string{filepath.Join(blocker, "known_hosts")}}
	_, err := checkKey(t, hostkeys.New(true, noWarnings(t), func(string) {}), h, ed)
	var he *inventory.HostError
	if !errors.As(err, &he) || he.Kind != inventory.ErrHostKeyUnknown || !strings.HasPrefix(he.Message, "cannot add host key to "+h.KnownHostsFiles[0]+": ") {
		t.Errorf("error = %v, want cannot add host key to %s: …", err, h.KnownHostsFiles[0])
	}
}

// One malformed line must not make every host unreachable: like OpenSSH,
// it is skipped with a warning naming file and line, once, and every other
// line keeps working (with its own line number in messages).
func TestHostKeysSkipMalformedLines(t *testing.T) {
	ed, ed2, ec, rs := hostTestKeys(t)
	edBlob := strings.Fields(khLine("x", ed))[2]
	tests := []struct {
		name, line, why string
	}{
		{"bad base64", "gpu09 ssh-ed25519 AAAA!!!!", "the key is not valid base64 (illegal base64 data at input byte 4)"},
		{"truncated key", "gpu09 ssh-ed25519 " + edBlob[:20], "the ssh-ed25519 key is corrupt"},
		{"unsupported type", "gpu09 ssh-foo AAAAB3NzaC1mb28=", "unsupported key type ssh-foo"},
		{"host only", "gpu09", "no key type and key after the host names"},
		{"no key", "gpu09 ssh-ed25519", "no key after the key type ssh-ed25519"},
		{"unknown marker", "@bogus gpu09 ssh-ed25519 " + edBlob, `unknown marker "@bogus"`},
		{"two markers", "@revoked @cert-authority gpu09 ssh-ed25519 " + edBlob, `unknown marker "@cert-authority"`},
		{"type mismatch", "gpu09 ssh-rsa " + edBlob, "the key is ssh-ed25519, the line says ssh-rsa"},
		{"bad hashed name", "|1|abc ssh-ed25519 " + edBlob, "bad hashed host name"},
		{"hash type 2", "|2|c2FsdA==|aGFzaA== ssh-ed25519 " + edBlob, "bad hashed host name"},
		{"bare negation", "gpu09,! ssh-ed25519 " + edBlob, "`!` without a host name"},
		{"bad bracket", "[gpu09 ssh-ed25519 " + edBlob, `bad host pattern "[gpu09"`},
		{"huge line", "gpu09 ssh-ed25519 " + strings.Repeat("A", 70<<10), "line longer than 32 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			kh := khLine("gpu00", ed2) + tt.line + "\n" + "# comment\r\n" + khLine("gpu01", ed) + khLine("gpu02", ec)
			file := testfs.WriteFile(t, dir, "known_hosts", kh)
			var w testkit.Warnings
			k := hostkeys.New(false, w.Add, nil)
			h := inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22, KnownHostsFiles: []string{file}}
			algos, err := checkKey(t, k, h, ed)
			if err != nil {
				t.Fatalf("key on line 4 refused: %v", err)
			}
			if want := []string{"ssh-ed25519"}; !reflect.DeepEqual(algos, want) {
				t.Errorf("algos = %q, want %q", algos, want)
			}
			want := []string{file + ":2: " + tt.why + " (line skipped)"}
			if got := w.Take(); !reflect.DeepEqual(got, want) {
				t.Errorf("warnings\n got: %q\nwant: %q", got, want)
			}
			// A changed key names the user's file and its line, not the
			// sanitised copy.
			_, err = checkKey(t, k, inventory.Host{Name: "gpu02", Address: "gpu02", Port: 22, KnownHostsFiles: []string{file}}, rs)
			wantHostKeyError(t, err, inventory.ErrHostKeyChanged,
				"host key changed ("+file+":5): the server sent ssh-rsa "+ssh.FingerprintSHA256(rs)+", possible man-in-the-middle",
				"if gpu02 was reinstalled, remove the old key with `ssh-keygen -R gpu02` and check the new fingerprint")
			if got := w.Take(); len(got) != 0 {
				t.Errorf("warned again: %q", got)
			}
			if matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "tfhive-known_hosts-*")); len(matches) != 0 {
				t.Errorf("temporary copies left behind: %q", matches)
			}
		})
	}
}

func TestHostKeysRevokedLineInSanitisedFile(t *testing.T) {
	ed, _, _, _ := hostTestKeys(t)
	file := testfs.WriteFile(t, t.TempDir(), "known_hosts", "garbage\n"+khLine("gpu01", ed)+
		"@revoked * "+strings.TrimSpace(string(ssh.MarshalAuthorizedKey(ed)))+"\n")
	var w testkit.Warnings
	_, err := checkKey(t, hostkeys.New(false, w.Add, nil), inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22, KnownHostsFiles: []string{file}}, ed)
	wantHostKeyError(t, err, inventory.ErrHostKeyChanged, "host key is revoked ("+file+":3)", "")
}

// A file that is not known_hosts at all warns a few times, not per line.
func TestHostKeysWarningsCapped(t *testing.T) {
	ed, _, _, _ := hostTestKeys(t)
	file := testfs.WriteFile(t, t.TempDir(), "known_hosts", strings.Repeat("junk\n", 8)+khLine("gpu01", ed))
	var w testkit.Warnings
	if _, err := checkKey(t, hostkeys.New(false, w.Add, nil), inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22, KnownHostsFiles: []string{file}}, ed); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 1; i <= 5; i++ {
		want = append(want, file+":"+strconv.Itoa(i)+": no key type and key after the host names (line skipped)")
	}
	want = append(want, file+": 3 more malformed lines skipped")
	if got := w.Take(); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings\n got: %q\nwant: %q", got, want)
	}
}

// known_hosts is read once per change, not once per host: an edit during a
// long run (ssh-keygen -R, a new key) is seen by the next connection.
func TestHostKeysRereadWhenChanged(t *testing.T) {
	ed, ed2, _, _ := hostTestKeys(t)
	dir := t.TempDir()
	h := inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22, KnownHostsFiles: []string{filepath.Join(dir, "known_hosts")}}
	var w testkit.Warnings
	k := hostkeys.New(false, w.Add, nil)
	testfs.WriteFile(t, dir, "known_hosts", "garbage\n"+khLine("gpu01", ed))
	if _, err := checkKey(t, k, h, ed); err != nil {
		t.Fatal(err)
	}
	testfs.WriteFile(t, dir, "known_hosts", "garbage\n# the key was replaced\n"+khLine("gpu01", ed2))
	if _, err := checkKey(t, k, h, ed2); err != nil {
		t.Errorf("new key refused after known_hosts changed: %v", err)
	}
	if got, want := w.Take(), []string{h.KnownHostsFiles[0] + ":1: no key type and key after the host names (line skipped)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("warnings = %q, want %q (once)", got, want)
	}
}

// A known_hosts path that is a FIFO or a device must not hang or exhaust
// memory; /dev/null (UserKnownHostsFile /dev/null) is simply empty.
func TestHostKeysUnboundedFiles(t *testing.T) {
	ed, _, _, _ := hostTestKeys(t)
	pipe := testfs.FIFO(t)
	for _, tt := range []struct{ file, err string }{
		{pipe, "known_hosts: " + pipe + ": not a regular file (a FIFO)"},
		{"/dev/zero", "known_hosts: /dev/zero: not a regular file (a character device)"},
		{testfs.SparseFile(t, 65<<20), "too large (65 MiB, the limit is 64 MiB)"},
	} {
		_, err := hostkeys.New(false, noWarnings(t), nil).For(inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22, KnownHostsFiles: []string{tt.file}})
		if err == nil || !strings.HasSuffix(err.Error(), tt.err) {
			t.Errorf("%s: error %v, want …%s", tt.file, err, tt.err)
		}
	}
	h := inventory.Host{Name: "gpu01", Address: "gpu01", Port: 22, KnownHostsFiles: []string{os.DevNull}}
	_, err := checkKey(t, hostkeys.New(false, noWarnings(t), nil), h, ed)
	wantHostKeyError(t, err, inventory.ErrHostKeyUnknown,
		"host key unknown: ssh-ed25519 "+ssh.FingerprintSHA256(ed)+" is not in /dev/null",
		"check the fingerprint, then rerun with --accept-new-host-keys (or `ssh gpu01` once) to trust it")
}
