package transport

import (
	"time"

	"golang.org/x/crypto/ssh"
)

// keepAlive is OpenSSH's ServerAlive*: a connection whose host has not
// answered a keepalive for every × max is closed, so that sessions on it
// fail instead of hanging. The clock runs from the last answer, not from
// the last request sent, so a silent link is dropped every × max after it
// fell silent at the latest, the same period the supervisors on the host
// wait for tfhive's heartbeats.
func keepAlive(c *ssh.Client, every time.Duration, max int) {
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	answered := make(chan struct{}, 1)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			// Blocks while the link is silent: x/crypto answers global
			// requests in order, so a second one would only queue.
			if _, _, err := c.SendRequest("keepalive@openssh.com", true, nil); err != nil {
				c.Close()
				return
			}
			select {
			case answered <- struct{}{}:
			default:
			}
		}
	}()
	silence := time.NewTimer(every * time.Duration(max))
	defer silence.Stop()
	for {
		select {
		case <-done:
			return
		case <-answered:
			silence.Reset(every * time.Duration(max))
		case <-silence.C:
			c.Close()
			return
		}
	}
}
