package env

import (
	"slices"
	"testing"
)

func TestReplaceFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		replace map[string]string
		want    []string
	}{
		{"nothing to replace", []string{"--a=1", "--b"}, nil, []string{"--a=1", "--b"}},
		{"joined value", []string{"--kubeconfig=/x", "--v=2"}, map[string]string{"--kubeconfig": "/y"}, []string{"--kubeconfig=/y", "--v=2"}},
		{"separate value", []string{"--kubeconfig", "/x", "--v=2"}, map[string]string{"--kubeconfig": "/y"}, []string{"--kubeconfig=/y", "--v=2"}},
		{"bare boolean before a flag", []string{"--leader-elect", "--v=2"}, map[string]string{"--leader-elect": "false"}, []string{"--leader-elect=false", "--v=2"}},
		{"every occurrence", []string{"--v=1", "--x", "--v=4"}, map[string]string{"--v": "6"}, []string{"--v=6", "--x", "--v=6"}},
		{"absent flags appended in name order", []string{"--a=1"}, map[string]string{"--z": "1", "--b": "2"}, []string{"--a=1", "--b=2", "--z=1"}},
		{"prefix is not the flag", []string{"--etcd-servers-overrides=x"}, map[string]string{"--etcd-servers": "y"}, []string{"--etcd-servers-overrides=x", "--etcd-servers=y"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := replaceFlags(slices.Clone(tc.args), tc.replace); !slices.Equal(got, tc.want) {
				t.Errorf("replaceFlags(%q, %v) = %q, want %q", tc.args, tc.replace, got, tc.want)
			}
		})
	}
}

// The command line of a restart: overrides apply to the defaults, to
// Options.AdvisorArgs and to the instance's own args; none restores them.
func TestNewAdvisorLaunch(t *testing.T) {
	e := &Env{Dir: "/env", AdvisorKubeconfig: "/env/advisor.kubeconfig",
		opts: Options{AdvisorArgs: []string{"--v=2"}},
		pki:  &pki{advisorServing: &keyPair{CertFile: "/env/tls.crt", KeyFile: "/env/tls.key"}}}
	base := launch{extra: []string{"--leader-elect=true"}}
	normal := e.newAdvisor(MainAdvisorName, 1234, base)
	if !slices.Contains(normal.Args, "--kubeconfig=/env/advisor.kubeconfig") || !slices.Contains(normal.Args, "--leader-elect=true") || normal.Env != nil {
		t.Fatalf("normal command line: %q env %q", normal.Args, normal.Env)
	}

	over := base
	over.env = []string{"VIRT_ADVISOR_FAILPOINTS=x"}
	over.replace = map[string]string{"--kubeconfig": "/via.kubeconfig", "--v": "4", "--leader-elect": "false"}
	got := e.newAdvisor(MainAdvisorName, 1234, over)
	for _, want := range []string{"--kubeconfig=/via.kubeconfig", "--v=4", "--leader-elect=false",
		"--authentication-kubeconfig=/env/advisor.kubeconfig", "--secure-port=1234"} {
		if !slices.Contains(got.Args, want) {
			t.Errorf("args %q lack %q", got.Args, want)
		}
	}
	for _, gone := range []string{"--kubeconfig=/env/advisor.kubeconfig", "--v=2", "--leader-elect=true"} {
		if slices.Contains(got.Args, gone) {
			t.Errorf("args %q still have %q", got.Args, gone)
		}
	}
	if !slices.Equal(got.Env, over.env) {
		t.Errorf("env = %q, want %q", got.Env, over.env)
	}
	if len(got.Args) != len(normal.Args) {
		t.Errorf("replacing changed the number of flags: %q vs %q", got.Args, normal.Args)
	}
}
