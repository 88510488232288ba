package advisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/dashboard"
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/explain"
	"github.com/kubevirt/virt-advisor/pkg/version"
)

type dashboardOptions struct {
	*options
	address string
	port    int
	open    bool
	refresh time.Duration
}

func newCmdDashboard(o *options) *cobra.Command {
	do := &dashboardOptions{options: o}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a web page on this computer to review, approve and follow plans",
		Long: `Serve a web page on this computer that lists the VirtPlatformConfigs, shows
each live plan as coloured diffs with the settings its hash binds, approves
exactly the plan shown (after a confirmation), and follows the rollout node
by node with the config's Events.

The page talks to the cluster with your kubeconfig, as this command does:
it can do exactly what you can do with kubectl. Every 403 and 409 is the
server's own; a plan that changed since you loaded it is refused.

The address printed (and opened with --open) carries a launch code that
works once, within 2 minutes: the browser that opens it gets a session
cookie, and the code is refused after that. The session's secret is never
in an address or a command line. Requests must name a loopback host (no DNS
rebinding) and forms carry a CSRF token. The server listens on 127.0.0.1
unless --address says otherwise, and then warns: whoever reaches that
address with the session cookie acts as you. Stop it with Ctrl-C.`,
		Example: `  kubectl advisor dashboard
  kubectl advisor dashboard --port 8080 --open
  kubectl advisor dashboard --as=alice`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return do.run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&do.address, "address", "127.0.0.1", "IP address to listen on. Anything but a loopback address exposes your cluster credentials' power to whoever reaches it with the session cookie.")
	cmd.Flags().IntVar(&do.port, "port", 0, "Port to listen on; 0 picks a free one.")
	cmd.Flags().BoolVar(&do.open, "open", false, "Open the page in the default browser.")
	cmd.Flags().DurationVar(&do.refresh, "refresh-interval", 2*time.Second, "How often an open page reads fresh data from the cluster.")
	return cmd
}

func (o *dashboardOptions) run(ctx context.Context) error {
	if o.refresh < 500*time.Millisecond {
		return fmt.Errorf("--refresh-interval=%s is too short: at least 500ms (every open page reads from the cluster that often)", o.refresh)
	}
	ip, err := o.bindIP()
	if err != nil {
		return err
	}
	c, err := o.newClients()
	if err != nil {
		return err
	}
	user, err := whoAmI(ctx, c)
	if err != nil {
		fmt.Fprintf(o.streams.ErrOut, "Warning: cannot tell who your kubeconfig authenticates as (%s); the page works without it, but cannot tell you whether the server wants a second approver.\n", explain.Brief(err))
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("cannot listen on %s port %d: %w", ip, o.port, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	srv, err := o.newServer(c, ip, port, user)
	if err != nil {
		ln.Close()
		return err
	}
	o.announce(ln.Addr(), ip, port, srv.LaunchPath(), user)
	return o.serve(ctx, ln, srv)
}

// bindIP is the IP address --address names; localhost is 127.0.0.1.
func (o *dashboardOptions) bindIP() (net.IP, error) {
	ip := net.ParseIP(o.address)
	if o.address == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
	}
	if ip == nil {
		return nil, fmt.Errorf("--address=%s is not an IP address: give one such as 127.0.0.1 (the default) or ::1", o.address)
	}
	return ip, nil
}

// newServer makes the secrets of this run (the session, the CSRF token,
// the launch code) and the dashboard that serves them.
func (o *dashboardOptions) newServer(c *clients, ip net.IP, port int, user string) (*dashboard.Server, error) {
	var session, csrf, code string
	for _, secret := range []struct {
		to  *string
		new func() (string, error)
	}{{&session, dashboard.NewSecret}, {&csrf, dashboard.NewSecret}, {&code, dashboard.NewLaunchCode}} {
		var err error
		if *secret.to, err = secret.new(); err != nil {
			return nil, err
		}
	}
	return dashboard.New(dashboard.Options{
		Clients: dashboard.Clients{Advisor: c.advisor, Kube: c.kube, Dynamic: c.dynamic},
		Session: session, CSRF: csrf, LaunchCode: code, Bind: ip, Port: port,
		User: user, Cluster: c.host, Refresh: o.refresh, Version: version.Version,
		Launched: func(userAgent string) {
			// Quoted: whoever sent the request chose the User-Agent, which
			// must not put escape sequences on the terminal.
			fmt.Fprintf(o.streams.Out, "%s: a browser used the launch code (User-Agent %q); the address no longer opens the dashboard.\n",
				time.Now().Format("15:04:05"), userAgent)
		},
	})
}

// announce prints the address to open (with the launch path), warns
// when it is not a loopback one, and opens a browser with --open.
func (o *dashboardOptions) announce(addr net.Addr, ip net.IP, port int, launchPath, user string) {
	if !ip.IsLoopback() {
		fmt.Fprintf(o.streams.ErrOut, "Warning: listening on %s, not on loopback: whoever reaches this address and gets the session cookie acts on the cluster as you. "+
			"Prefer the default (127.0.0.1) and an SSH tunnel.\n", ip)
	}
	host := ip.String()
	if ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + launchPath
	as := ""
	if user != "" {
		as = " as " + user
	}
	fmt.Fprintf(o.streams.Out, "Serving the virt-advisor dashboard%s on %s. Open this address in one browser within %.0f minutes (its code works once):\n\n    %s\n\nPress Ctrl-C to stop.\n",
		as, addr, dashboard.DefaultLaunchTTL.Minutes(), url)
	if o.open {
		open := o.openBrowser
		if open == nil {
			open = openBrowser
		}
		if err := open(url); err != nil {
			fmt.Fprintf(o.streams.ErrOut, "Warning: cannot open a browser (%v): open the address above yourself.\n", err)
		}
	}
}

// serve serves the dashboard on ln until ctx is done.
func (o *dashboardOptions) serve(ctx context.Context, ln net.Listener, srv *dashboard.Server) error {
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("the dashboard stopped: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	fmt.Fprintln(o.streams.Out, "Stopped.")
	return nil
}

// whoAmI asks the cluster who the kubeconfig authenticates as (a
// SelfSubjectReview), so the page can say it and explain four eyes.
func whoAmI(ctx context.Context, c *clients) (string, error) {
	if c.kube == nil {
		return "", errors.New("no client")
	}
	r, err := c.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	if r.Status.UserInfo.Username == "" {
		return "", errors.New("the server named no user")
	}
	return r.Status.UserInfo.Username, nil
}

// openBrowser opens url in the desktop's default browser.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
