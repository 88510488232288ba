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

	address := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?code=[0-9a-f]{32}`)
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
	if !regexp.MustCompile(`Press Ctrl-C to stop.\n\d\d:\d\d:\d\d: a browser used the launch code \(User-Agent "Go-http-client/1.1"\); the address no longer opens the dashboard.\nStopped.\n$`).MatchString(out.String()) {
		t.Errorf("stdout:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), "Warning: cannot tell who your kubeconfig authenticates as") {
		t.Errorf("stderr:\n%s", errOut.String())
	}
}

// TestDashboardLaunchCode: the printed and opened address carries a launch
// code that works once; the session secret the browser gets in a cookie
// appears in no address and no process argument (the browser's command
// line is readable by every local user in /proc).
func TestDashboardLaunchCode(t *testing.T) {
	h := newHarness(t)
	var out, errOut lockedBuffer
	opened := make(chan string, 1)
	o := &options{
		streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		newClients: func() (*clients, error) {
			return &clients{advisor: h.advisor, dynamic: h.dynamic, kube: kubefake.NewClientset(), host: "https://api.example:6443"}, nil
		},
		openBrowser: func(url string) error { opened <- url; return nil },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- execute(ctx, newRootCmd(o), []string{"dashboard", "--open"}, &errOut) }()
	defer func() {
		cancel()
		<-done
	}()

	var url string
	select {
	case url = <-opened:
	case <-time.After(10 * time.Second):
		t.Fatalf("no browser opened:\n%s%s", out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), url) {
		t.Errorf("the opened address %s is not the printed one:\n%s", url, out.String())
	}
	get := func(c *http.Client) (*http.Response, string) {
		t.Helper()
		res, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(body)
	}

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	res, body := get(browser)
	if res.StatusCode != 200 || res.Request.URL.RawQuery != "" {
		t.Fatalf("first use: %d at %s\n%s", res.StatusCode, res.Request.URL, body)
	}
	cookies := jar.Cookies(res.Request.URL)
	if len(cookies) != 1 || len(cookies[0].Value) < 32 {
		t.Fatalf("cookies after the first use: %v", cookies)
	}
	session := cookies[0].Value
	if strings.Contains(url, session) || strings.Contains(out.String(), session) || strings.Contains(errOut.String(), session) {
		t.Errorf("the session secret %s is in the opened address %s or the output:\n%s%s", session, url, out.String(), errOut.String())
	}

	res, body = get(&http.Client{})
	if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "already used") || !strings.Contains(body, "kubectl advisor dashboard") {
		t.Errorf("second use: %d\n%s", res.StatusCode, body)
	}
	res, body = get(browser)
	if res.StatusCode != 200 || !strings.Contains(body, "No VirtPlatformConfigs found.") {
		t.Errorf("the browser that used the code, with its cookie: %d\n%s", res.StatusCode, body)
	}
}
