package fakemco

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// A GET to a server that is not listening yet waits until it listens; a
// request whose context ends stops waiting, and a POST is not retried.
func TestWaitWhileRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // refused until the server below listens
	rt := waitWhileRefused{next: http.DefaultTransport, every: 10 * time.Millisecond}
	client := &http.Client{Transport: rt}

	post, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", nil)
	if _, err := client.Do(post); err == nil {
		t.Fatal("a POST to a closed port succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if _, err := client.Do(get); err == nil {
		t.Fatal("a GET whose context ended succeeded")
	}

	done := make(chan error, 1)
	go func() {
		resp, err := client.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the GET failed instead of waiting: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the GET did not return once the server listened")
	}
}
