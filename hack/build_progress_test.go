package hack_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// elapsed is a duration the script prints: the clock's, not the test's,
// so a busy machine (a second passes) does not fail the test.
var elapsed = regexp.MustCompile(`\b[0-9]+m[0-9]{2}s\b`)

// TestBuildProgress: hack/build-progress.sh counts the packages `go build
// -v` names, says how far it is, and passes errors through.
func TestBuildProgress(t *testing.T) {
	for _, tc := range []struct {
		name, every, in string
		want            []string
	}{
		{
			name:  "a line per package, errors passed through",
			every: "0",
			in:    "k8s.io/kubernetes/pkg/api\ngopkg.in/yaml.v3\n# k8s.io/broken\nbroken/x.go:3:1: syntax error\ngithub.com/a/b-c_d~e+f\n",
			want: []string{
				">> tools: 1 of at most 5 packages compiled, 0m00s elapsed",
				">> tools: 2 of at most 5 packages compiled, 0m00s elapsed",
				"# k8s.io/broken",
				"broken/x.go:3:1: syntax error",
				">> tools: 3 of at most 5 packages compiled, 0m00s elapsed",
				">> tools: 3 packages compiled in 0m00s",
			},
		},
		{
			name:  "quiet between intervals, the total at the end",
			every: "3600",
			in:    "a/b\nc/d\nwarning: something\n",
			want:  []string{"warning: something", ">> tools: 2 packages compiled in 0m00s"},
		},
		{
			name:  "nothing compiled (everything cached)",
			every: "20",
			in:    "",
			want:  []string{">> tools: 0 packages compiled in 0m00s"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("./build-progress.sh", "tools", "5")
			cmd.Env = append(cmd.Environ(), "PROGRESS_EVERY="+tc.every)
			cmd.Stdin = strings.NewReader(tc.in)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			got := elapsed.ReplaceAllString(string(out), "XmXXs")
			if want := elapsed.ReplaceAllString(strings.Join(tc.want, "\n")+"\n", "XmXXs"); got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
