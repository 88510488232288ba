package advisor

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// lockedBuffer is written by the command's goroutine and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestDashboardFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dashboard", "--address=example.com"}, "Error: --address=example.com is not an IP address: give one such as 127.0.0.1 (the default) or ::1\n"},
		{[]string{"dashboard", "--refresh-interval=10ms"}, "Error: --refresh-interval=10ms is too short: at least 500ms (every open page reads from the cluster that often)\n"},
		{[]string{"dashboard", "extra"}, `Error: unknown command "extra" for "kubectl advisor dashboard"` + "\n"},
	} {
		h := newHarness(t)
		if code := h.run(t, "", tc.args...); code != exitError {
			t.Errorf("%v: exit %d", tc.args, code)
		}
		if h.err.String() != tc.want {
			t.Errorf("%v:\n got %q\nwant %q", tc.args, h.err.String(), tc.want)
		}
	}
}

// TestDashboardServes: it prints an address with the token, serves until
// the context ends, and warns when it cannot tell who the user is.
func TestDashboardServes(t *testing.T) {
	h := newHarness(t)
	var out, errOut lockedBuffer
	o := &options{
		streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		newClients: func() (*clients, error) {
			return &clients{advisor: h.advisor, dynamic: h.dynamic, kube: kubefake.NewClientset(), host: "https://api.example:6443"}, nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- execute(ctx, newRootCmd(o), []string{"dashboard"}, &errOut) }()

	address := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}`)
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		url = address.FindString(out.String())
	}
	if url == "" {
		cancel()
		t.Fatalf("no address printed:\n%s%s", out.String(), errOut.String())
	}
	jar, _ := cookiejar.New(nil)
	res, err := (&http.Client{Jar: jar}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Request.URL.RawQuery != "" || !strings.Contains(string(body), "No VirtPlatformConfigs found.") {
		t.Errorf("GET %s: %d at %s\n%s", url, res.StatusCode, res.Request.URL, body)
	}

	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasSuffix(out.String(), "Press Ctrl-C to stop.\nStopped.\n") {
		t.Errorf("stdout:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), "Warning: cannot tell who your kubeconfig authenticates as") {
		t.Errorf("stderr:\n%s", errOut.String())
	}
}
