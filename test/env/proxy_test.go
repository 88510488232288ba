package env

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// quiet is how long a read waits to conclude that nothing arrives.
const quiet = 300 * time.Millisecond

// echoServer answers every connection with what it receives; stop closes
// it and waits for its goroutines.
func echoServer(t *testing.T) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, c); c.Close() })
		}
	})
	return ln.Addr().String(), func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// expectEcho reads msg back within wait.
func expectEcho(t *testing.T, c net.Conn, msg string, wait time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading the echo of %q: %v", msg, err)
	}
	if string(got) != msg {
		t.Fatalf("echo = %q, want %q", got, msg)
	}
}

// expectSilence checks that nothing arrives for a while.
func expectSilence(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(quiet))
	n, err := c.Read(make([]byte, 64))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes, err %v; want nothing (timeout) while stalled", n, err)
	}
}

// expectClosed checks that the connection ends, without data, soon.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := c.Read(make([]byte, 64))
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes, err %v; want the connection closed", n, err)
	}
}

// waitGoroutines waits until no more goroutines run than at baseline.
func waitGoroutines(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the test:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProxy(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, p *Proxy)
	}{
		{"forwards both ways on many connections", func(t *testing.T, p *Proxy) {
			a, b := dial(t, p), dial(t, p)
			send(t, a, "hello")
			send(t, b, "world")
			expectEcho(t, b, "world", 2*time.Second)
			expectEcho(t, a, "hello", 2*time.Second)
			big := string(bytes.Repeat([]byte("x"), 1<<20)) // more than one buffer
			go func() { _, _ = a.Write([]byte(big)) }()
			expectEcho(t, a, big, 5*time.Second)
			if n := p.Conns(); n != 2 {
				t.Errorf("Conns() = %d, want 2", n)
			}
		}},
		{"stall holds bytes on open and new connections until resume", func(t *testing.T, p *Proxy) {
			open := dial(t, p)
			send(t, open, "before")
			expectEcho(t, open, "before", 2*time.Second)
			p.Stall()
			p.Stall() // idempotent
			send(t, open, "during")
			expectSilence(t, open)
			fresh := dial(t, p) // still accepted
			send(t, fresh, "new")
			expectSilence(t, fresh)
			p.Resume()
			expectEcho(t, open, "during", 2*time.Second)
			expectEcho(t, fresh, "new", 2*time.Second)
		}},
		{"drop breaks open connections and refuses new ones until resume", func(t *testing.T, p *Proxy) {
			open := dial(t, p)
			send(t, open, "ping")
			expectEcho(t, open, "ping", 2*time.Second)
			p.Drop()
			expectClosed(t, open)
			refused := dial(t, p)
			_, _ = refused.Write([]byte("anyone?"))
			expectClosed(t, refused)
			if n := p.Conns(); n != 0 {
				t.Errorf("Conns() = %d after Drop, want 0", n)
			}
			p.Resume()
			again := dial(t, p)
			send(t, again, "back")
			expectEcho(t, again, "back", 2*time.Second)
		}},
		{"drop ends a stall", func(t *testing.T, p *Proxy) {
			open := dial(t, p)
			p.Stall()
			send(t, open, "held")
			expectSilence(t, open)
			p.Drop()
			expectClosed(t, open)
		}},
		{"close stops everything, even stalled connections", func(t *testing.T, p *Proxy) {
			open := dial(t, p)
			p.Stall()
			send(t, open, "held") // a pipe now waits in the stall
			expectSilence(t, open)
			closed := make(chan error, 1)
			go func() { closed <- p.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("Close: %v", err)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("Close did not return")
			}
			expectClosed(t, open)
			if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
				c.Close()
				t.Error("the proxy still accepts connections after Close")
			}
			if err := p.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			p.Resume() // harmless after Close
		}},
		{"mode changes race with traffic", func(t *testing.T, p *Proxy) {
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for range 8 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
						if err != nil {
							continue
						}
						_ = c.SetDeadline(time.Now().Add(50 * time.Millisecond))
						_, _ = c.Write([]byte("x"))
						_, _ = c.Read(make([]byte, 1))
						c.Close()
					}
				})
			}
			for i := range 60 {
				switch i % 3 {
				case 0:
					p.Stall()
				case 1:
					p.Drop()
				default:
					p.Resume()
				}
				_ = p.Conns()
				time.Sleep(5 * time.Millisecond)
			}
			close(stop)
			wg.Wait()
			p.Resume()
			c := dial(t, p)
			send(t, c, "still works")
			expectEcho(t, c, "still works", 2*time.Second)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			baseline := runtime.NumGoroutine()
			target, stopEcho := echoServer(t)
			p, err := NewProxy(target)
			if err != nil {
				t.Fatal(err)
			}
			tc.run(t, p)
			if err := p.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			stopEcho()
			waitGoroutines(t, baseline)
		})
	}
}

func TestProxyTargetDown(t *testing.T) {
	baseline := runtime.NumGoroutine()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close() // nothing listens there now
	p, err := NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	expectClosed(t, c) // the client sees its connection end, as the target refused
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitGoroutines(t, baseline)
}
