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
)

// NewSecret returns 32 random bytes, hex encoded: the per-run token and
// CSRF token.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cannot make a random token: %w", err)
	}
	return hex.EncodeToString(b), nil
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

// check decides a request: a refusal, a redirect that trades the token in
// the URL for a cookie, or nil to serve it.
func (s *Server) check(w http.ResponseWriter, r *http.Request) *refusal {
	if !hostAllowed(r.Host, s.bind) {
		return &refusal{http.StatusForbidden, "Refused: not a loopback host name",
			fmt.Sprintf("The Host header %q does not name this computer's loopback interface, so this request may come from a page that tricked "+
				"your browser (DNS rebinding). Open the address that kubectl advisor dashboard printed.", r.Host)}
	}
	if tok := r.URL.Query().Get("token"); tok != "" {
		if !equalSecret(tok, s.token) {
			return &refusal{http.StatusUnauthorized, "Refused: wrong token",
				"This token is not the one of this run. Open the address that kubectl advisor dashboard printed: every run has a new token."}
		}
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			// The token moves into a cookie and out of the address bar,
			// the history and any Referer.
			http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			next := *r.URL
			next.RawQuery = q.Encode()
			http.Redirect(w, r, next.RequestURI(), http.StatusSeeOther)
			return &refusal{} // answered
		}
	} else if c, err := r.Cookie(s.cookie); err != nil || !equalSecret(c.Value, s.token) {
		return &refusal{http.StatusUnauthorized, "Refused: this page needs the token of this run",
			"Open the address that kubectl advisor dashboard printed; it carries a token that is new on every run. After the first page the browser keeps it in a cookie."}
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
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
