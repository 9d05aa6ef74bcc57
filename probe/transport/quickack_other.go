//go:build !linux

package transport

import "net"

// quickAck is Linux only (TCP_QUICKACK): elsewhere the connection is used
// as it is.
func quickAck(c net.Conn) net.Conn { return c }
