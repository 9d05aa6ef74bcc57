package tensorboard

import (
	"context"
	"io"
	"net"
	"sync"
)

// Forward carries every connection ln accepts to a connection dial opens
// (a direct-tcpip channel of the host's SSH connection: TensorBoard on
// the host's 127.0.0.1), bytes both ways, until ctx ends or ln is closed;
// then it closes ln and every connection and returns once they are done.
// A connection dial cannot open is closed at once (the browser says the
// page failed), and the others go on.
func Forward(ctx context.Context, ln net.Listener, dial func(context.Context) (net.Conn, error)) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	track := func(c net.Conn, on bool) {
		mu.Lock()
		defer mu.Unlock()
		if on {
			open[c] = true
		} else {
			delete(open, c)
		}
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			track(c, true)
			defer track(c, false)
			up, err := dial(ctx)
			if err != nil {
				return
			}
			track(up, true)
			defer track(up, false)
			defer up.Close()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				io.Copy(dst, src)
				// One side said all it will: the other may still answer
				// (HTTP's request then response), unless it cannot be
				// half-closed, when both end.
				if hc, ok := dst.(interface{ CloseWrite() error }); ok {
					hc.CloseWrite()
				} else {
					dst.Close()
				}
				done <- struct{}{}
			}
			go pipe(up, c)
			go pipe(c, up)
			<-done
			<-done
		}()
	}
	ln.Close()
	mu.Lock()
	for c := range open {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
}
