package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/tfhive/tfhive/probe/wording"
)

// maxAnswer bounds what is read of a webhook's answer or a command's
// output: enough for an error's first line.
const maxAnswer = 64 << 10

// client posts webhooks: no redirects followed (a hook that moved says
// so rather than being sent elsewhere), the proxy from the environment
// as any HTTP client's.
var client = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     &http.Transport{Proxy: http.ProxyFromEnvironment, ResponseHeaderTimeout: Timeout},
}

func (t Target) deliver(ctx context.Context, e Event, timeout time.Duration) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if t.url != nil {
		return post(ctx, t.url, body, timeout)
	}
	return runCommand(ctx, t.command, e, body, timeout)
}

func post(ctx context.Context, u *url.URL, body []byte, timeout time.Duration) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return bare(err, timeout)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tfhive")
	resp, err := client.Do(req)
	if err != nil {
		return bare(err, timeout)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	msg := "HTTP " + resp.Status
	if line := strings.TrimSpace(wording.FirstLine(string(answer))); line != "" {
		msg += ": " + wording.Cut(line, 120)
	}
	return errors.New(msg)
}

// bare is err without the URL that net/http's errors quote.
func bare(err error, timeout time.Duration) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer in %s", timeout)
	}
	return err
}

// runCommand runs text by sh -c, the event in its environment and as
// JSON on its stdin, in a process group of its own so that the timeout
// stops whatever it started. The rest of its environment is the user's:
// this tfhive's, less what tfhive set there for itself (Internal).
func runCommand(ctx context.Context, text string, e Event, body []byte, timeout time.Duration) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", text)
	cmd.Env = append(userEnv(os.Environ()), e.env()...)
	cmd.Stdin = bytes.NewReader(append(body, '\n'))
	var out limited
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("still running after %s: stopped", timeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		msg := ee.String()
		if line := strings.TrimSpace(wording.FirstLine(out.b.String())); line != "" {
			msg += ": " + wording.Cut(line, 120)
		}
		return errors.New(msg)
	}
	return err
}

// internalPrefixes are the names of what tfhive puts in the environment
// of a tfhive it starts, for that one alone: a detached run's keeper's
// (launcher/keeper: TFHIVE_KEEPER, TFHIVE_KEEPER_RUN_ID, …) and a
// detached TensorBoard's keeper's (TFHIVE_TENSORBOARD_KEEPER). Their
// tests check that each name they set is Internal.
var internalPrefixes = []string{"TFHIVE_KEEPER", "TFHIVE_TENSORBOARD_KEEPER"}

// Internal says whether the variable name is one tfhive sets for itself:
// a notification command never sees it.
func Internal(name string) bool {
	for _, p := range internalPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// userEnv is environ (NAME=VALUE) less tfhive's own variables (Internal).
func userEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !Internal(name) {
			out = append(out, kv)
		}
	}
	return out
}

// limited keeps the first maxAnswer bytes written to it.
type limited struct{ b bytes.Buffer }

func (l *limited) Write(p []byte) (int, error) {
	if room := maxAnswer - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
