package transport

import (
	"io"
	"net"
	"syscall"
	"testing"
)

// A read that drains the socket leaves it acknowledging at once, even
// after the kernel had switched it to delayed acknowledgements (which
// setting TCP_QUICKACK to 0 does here, as a run of request and answer
// does on its own).
func TestQuickAckAfterADrainingRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("SSH-2.0-test\r\n"))
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c := quickAck(raw)
	if _, ok := c.(*quickAckConn); !ok {
		t.Fatalf("quickAck(%T) = %T, want the acknowledging wrapper", raw, c)
	}
	rc, _ := raw.(*net.TCPConn).SyscallConn()
	quick := func() (v int) {
		rc.Control(func(fd uintptr) {
			v, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK)
		})
		return v
	}
	rc.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 0)
	})
	if quick() != 0 {
		t.Fatal("cannot put the socket in delayed-ack mode: the check below would prove nothing")
	}
	buf := make([]byte, 4096)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "SSH-2.0-test\r\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if quick() != 1 {
		t.Error("after a read that drained the socket, acknowledgements are still delayed")
	}
	// Anything but a TCP connection (a channel through a jump host) is
	// used as it is.
	p, q := net.Pipe()
	defer p.Close()
	defer q.Close()
	if quickAck(p) != p {
		t.Error("a pipe was wrapped")
	}
}
