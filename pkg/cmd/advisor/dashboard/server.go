// Package dashboard is the web view of kubectl advisor dashboard: a page
// served on loopback that lists VirtPlatformConfigs, shows a live plan as
// coloured diffs, approves exactly the plan shown, and follows the rollout
// node by node.
//
// It talks to the cluster only with the clients it is given, built from
// the user's kubeconfig: RBAC, four eyes and every 403 or 409 are the
// server's own, and the page never has more rights than the person. Every
// request needs the session cookie and a loopback Host; a POST needs the
// CSRF token of the page's forms. The browser gets the cookie by trading
// the one-time launch code of the printed address, so the session's secret
// is in no address and no process's arguments.
package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// stylesheet is inlined into refused pages; its hash is what the
// Content-Security-Policy allows of inline styles.
//
//go:embed static/dashboard.css
var stylesheet string

var stylesheetHash = func() string {
	sum := sha256.Sum256([]byte(stylesheet))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// Clients are the user's own: built from their kubeconfig.
type Clients struct {
	Advisor versioned.Interface
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// Options configure a Server.
type Options struct {
	Clients Clients
	// Session is the secret of the session cookie, required on every
	// request, and CSRF the token required on every POST (both NewSecret).
	// Neither is ever put in an address.
	Session, CSRF string
	// LaunchCode is the one-time code of the address the command prints
	// (NewLaunchCode): the first GET that carries it gets the session
	// cookie; it is refused after that, and LaunchTTL (default
	// DefaultLaunchTTL) after New.
	LaunchCode string
	LaunchTTL  time.Duration
	// Launched, if set, is called when a browser trades the launch code
	// for the cookie, with its User-Agent.
	Launched func(userAgent string)
	// Bind is the IP address the server listens on, and Port its port:
	// they decide which Host headers are accepted and name the cookie.
	Bind net.IP
	Port int
	// User is who the kubeconfig authenticates as ("" if unknown), and
	// Cluster the API server's address: both shown in the page header.
	User, Cluster string
	// Refresh is how often the page's script asks for fresh data.
	Refresh time.Duration
	// Version is shown in the footer.
	Version string
	// Clock tells the time (tests use a fake one); nil: the real clock.
	Clock clock.PassiveClock
}

// Server serves the dashboard; it is an http.Handler.
type Server struct {
	c                     Clients
	session, csrf, cookie string
	launch                launch
	launched              func(userAgent string)
	bind                  net.IP
	user, cluster         string
	refresh               time.Duration
	version               string
	clock                 clock.PassiveClock
	pages                 map[string]*template.Template
	handler               http.Handler
}

var pageNames = []string{"configs", "plan", "confirm", "abort", "rollout", "refused", "fleet"}

// New returns the dashboard's handler.
func New(o Options) (*Server, error) {
	if o.Session == "" || o.CSRF == "" || o.LaunchCode == "" {
		return nil, fmt.Errorf("dashboard: a session secret, a CSRF token and a launch code are required")
	}
	s := &Server{
		c: o.Clients, session: o.Session, csrf: o.CSRF, bind: o.Bind, launched: o.Launched,
		// Cookies ignore the port: one name per port keeps two dashboards
		// on one machine from overwriting each other's token.
		cookie: "advisor-dashboard-" + strconv.Itoa(o.Port),
		user:   o.User, cluster: o.Cluster, refresh: o.Refresh, version: o.Version, clock: o.Clock,
	}
	if s.refresh <= 0 {
		s.refresh = 2 * time.Second
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	ttl := o.LaunchTTL
	if ttl <= 0 {
		ttl = DefaultLaunchTTL
	}
	s.launch = launch{code: o.LaunchCode, ttl: ttl, expires: s.clock.Now().Add(ttl)}
	if err := s.parsePages(); err != nil {
		return nil, err
	}
	mux, err := s.routes()
	if err != nil {
		return nil, err
	}
	s.handler = s.guard(mux)
	return s, nil
}

// parsePages parses the template of each page, with the layout and the
// parts they share.
func (s *Server) parsePages() error {
	s.pages = map[string]*template.Template{}
	base, err := template.New("").Funcs(s.funcs()).ParseFS(templateFS, "templates/layout.html", "templates/parts.html")
	if err != nil {
		return fmt.Errorf("dashboard templates: %w", err)
	}
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("dashboard template %s: %w", name, err)
		}
		s.pages[name] = t
	}
	return nil
}

// routes are the dashboard's pages, forms and static files.
func (s *Server) routes() (*http.ServeMux, error) {
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.configsPage)
	mux.HandleFunc("GET /configs/{name}", s.planPage)
	mux.HandleFunc("GET /configs/{name}/summary", s.summaryPart)
	mux.HandleFunc("GET /configs/{name}/rollout", s.rolloutPage)
	mux.HandleFunc("GET /fleets/{namespace}/{name}", s.fleetPage)
	mux.HandleFunc("POST /configs/{name}/approve", s.approve)
	mux.HandleFunc("POST /configs/{name}/abort", s.abort)
	mux.HandleFunc("/configs/{name}/abort", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		s.refuse(w, &refusal{http.StatusMethodNotAllowed, "Method not allowed", "Aborting takes the abort button of a rollout page (a POST)."})
	})
	mux.HandleFunc("/configs/{name}/approve", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		s.refuse(w, &refusal{http.StatusMethodNotAllowed, "Method not allowed", "Approving takes the approve button of a plan page (a POST)."})
	})
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, &refusal{http.StatusNotFound, "Not found", "There is no page at " + r.URL.Path + "."})
	})
	return mux, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// page is what every page template gets: the page's own data and what the
// layout shows around it.
type page struct {
	// InlineCSS is the stylesheet of a refused page, which may not load
	// /static without the token.
	InlineCSS template.CSS
	Title     string
	Nav       string // "configs" or the config name
	User      string
	Cluster   string
	CSRF      string
	Refresh   int64 // milliseconds; 0: the page is not refreshed
	Version   string
	Data      any
}

// render writes a page with status code, or a plain error if the template
// fails (before anything was written).
func (s *Server) render(w http.ResponseWriter, code int, name string, p page) {
	p.User, p.Cluster, p.CSRF, p.Version = s.user, s.cluster, s.csrf, s.version
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		http.Error(w, "dashboard: cannot render the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = buf.WriteTo(w)
}

// refuse answers a request the guard or the router turned away. Nothing of
// the cluster is read, and the page carries no CSRF token.
func (s *Server) refuse(w http.ResponseWriter, r *refusal) {
	var buf bytes.Buffer
	if err := s.pages["refused"].ExecuteTemplate(&buf, "layout", page{InlineCSS: template.CSS(stylesheet), Title: r.Title, Version: s.version, Data: r}); err != nil {
		http.Error(w, r.Title+": "+r.Detail, r.Code)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(r.Code)
	_, _ = buf.WriteTo(w)
}
