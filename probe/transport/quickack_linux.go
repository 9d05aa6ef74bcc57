package transport

import (
	"net"
	"syscall"
)

// quickAck makes the connection acknowledge what it reads at once.
//
// sshd leaves Nagle's algorithm on for sessions without a terminal, so
// of two small packets it writes in a row (after authentication: its
// host keys, then more) the second waits until we acknowledge the
// first. Linux delays that acknowledgement up to 40 ms, hoping to send
// it with data of ours, but we are waiting for sshd's next packet: every
// connection stalled for 40 ms between login and the session opening,
// more than the whole probe takes on a LAN. TCP_QUICKACK, set after a
// read that drained the socket (the moment we may start waiting), sends
// the pending acknowledgement now; a read that filled its buffer has
// more behind it and the kernel acknowledges full segments by itself.
func quickAck(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &quickAckConn{TCPConn: tc, rc: rc}
}

type quickAckConn struct {
	*net.TCPConn
	rc syscall.RawConn
}

func (c *quickAckConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	if n > 0 && n < len(p) {
		c.rc.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
		})
	}
	return n, err
}
