package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// NewSecret returns 32 random bytes, hex encoded: the session secret and
// the CSRF token of a run.
func NewSecret() (string, error) { return random(32) }

// NewLaunchCode returns 16 random bytes, hex encoded: the one-time code of
// the address the command prints and opens.
func NewLaunchCode() (string, error) { return random(16) }

func random(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cannot make a random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// DefaultLaunchTTL is how long the launch code works: long enough to paste
// the address into a browser, short enough that a code read from a
// process's arguments or a terminal's scrollback is most likely dead.
const DefaultLaunchTTL = 2 * time.Minute

// launchParam is the query parameter of the launch code.
const launchParam = "code"

// launch is the one-time code that a browser trades for the session
// cookie: it works once, before it expires.
type launch struct {
	mu      sync.Mutex
	code    string
	ttl     time.Duration
	expires time.Time
	used    bool
}

// LaunchPath is the path and query of the address to print or open: it
// carries the launch code, never the session secret.
func (s *Server) LaunchPath() string { return "/?" + launchParam + "=" + s.launch.code }

// useLaunchCode spends the launch code: nil if code is the launch code,
// unused and unexpired; a refusal otherwise. Any presentation of the right
// code spends it.
func (s *Server) useLaunchCode(code string) *refusal {
	l := &s.launch
	l.mu.Lock()
	defer l.mu.Unlock()
	again := " Run kubectl advisor dashboard again: it prints a new address with a new code."
	switch {
	case !equalSecret(code, l.code):
		return &refusal{http.StatusForbidden, "Refused: not the launch code of this run",
			"This address carries a launch code that this dashboard did not print. Every run prints its own." + again}
	case !s.clock.Now().Before(l.expires):
		return &refusal{http.StatusForbidden, "Refused: this launch code has expired",
			fmt.Sprintf("A launch code works once, within %s of the dashboard's start.", duration.HumanDuration(l.ttl)) + again}
	case l.used:
		return &refusal{http.StatusForbidden, "Refused: this launch code was already used",
			"A launch code opens the dashboard in one browser, once; the browser that used it keeps a cookie. " +
				"If that was not you, someone else on this computer may have opened your dashboard: stop it with Ctrl-C." + again}
	}
	l.used = true
	return nil
}

// maxFormBytes bounds a POST body: an approval form is a few hundred bytes.
const maxFormBytes = 16 << 10

// refusal is why the guard turned a request away, shown to whoever sent it.
type refusal struct {
	Code   int
	Title  string
	Detail string
}

// hostAllowed says whether a Host header names this server in a way DNS
// rebinding cannot forge: a loopback name or address, or, when the
// server was bound elsewhere on purpose, that IP address (any IP
// address for a wildcard bind). Names other than localhost are refused:
// a page from evil.example whose name resolves to 127.0.0.1 carries
// Host: evil.example.
func hostAllowed(hostport string, bind net.IP) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return false
	case ip.IsLoopback():
		return true
	case bind == nil || bind.IsLoopback():
		return false
	case bind.IsUnspecified():
		return true
	}
	return ip.Equal(bind)
}

// sameOrigin says whether a browser's Origin or Sec-Fetch-Site headers, when
// present, say the request comes from a page of this server.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

func equalSecret(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// check decides a request: a refusal, a redirect that trades the launch
// code in the URL for the session cookie, or nil to serve it.
func (s *Server) check(w http.ResponseWriter, r *http.Request) *refusal {
	if !hostAllowed(r.Host, s.bind) {
		return &refusal{http.StatusForbidden, "Refused: not a loopback host name",
			fmt.Sprintf("The Host header %q does not name this computer's loopback interface, so this request may come from a page that tricked "+
				"your browser (DNS rebinding). Open the address that kubectl advisor dashboard printed.", r.Host)}
	}
	session := false
	if c, err := r.Cookie(s.cookie); err == nil && equalSecret(c.Value, s.session) {
		session = true
	}
	if code := r.URL.Query().Get(launchParam); code != "" && r.Method == http.MethodGet {
		return s.trade(w, r, code, session)
	}
	if !session {
		return &refusal{http.StatusUnauthorized, "Refused: this page needs the session of this run",
			"Open the address that kubectl advisor dashboard printed: its launch code gives this browser a cookie, once. " +
				"A dashboard of an earlier run, or another browser, needs the address of a new run."}
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
	return s.checkForm(w, r)
}

// trade answers a GET with a launch code: it trades a valid code for the
// session cookie, then redirects to the address without the code.
func (s *Server) trade(w http.ResponseWriter, r *http.Request, code string, session bool) *refusal {
	if ref := s.useLaunchCode(code); ref != nil && !session {
		return ref
	}
	if !session {
		// The only place the session secret leaves the server: an
		// HttpOnly cookie that no script and no other site gets.
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		if s.launched != nil {
			s.launched(r.UserAgent())
		}
	}
	// The code leaves the address bar (and the history's last entry).
	q := r.URL.Query()
	q.Del(launchParam)
	next := *r.URL
	next.RawQuery = q.Encode()
	http.Redirect(w, r, next.RequestURI(), http.StatusSeeOther)
	return &refusal{} // answered
}

// checkForm decides a request of a session that is no GET: only a POST
// of a form of this dashboard is served.
func (s *Server) checkForm(w http.ResponseWriter, r *http.Request) *refusal {
	if r.Method != http.MethodPost {
		return &refusal{http.StatusMethodNotAllowed, "Refused: method not allowed", "This dashboard changes things only with POST from its own forms."}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return &refusal{http.StatusBadRequest, "Refused: unreadable form", err.Error()}
	}
	if !sameOrigin(r) || !equalSecret(r.PostForm.Get("csrf"), s.csrf) {
		return &refusal{http.StatusForbidden, "Refused: the form did not come from this dashboard",
			"A request that changes something must come from a form of this page (it carries a CSRF token). Nothing was done. Reload the page and try again."}
	}
	return nil
}

// guard wraps every handler: security headers on every answer, then check.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self' "+stylesheetHash+"; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// same-origin, not no-referrer: with no-referrer browsers send
		// "Origin: null" on form posts, which sameOrigin must refuse.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if ref := s.check(w, r); ref != nil {
			if ref.Code != 0 {
				s.refuse(w, ref)
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}
