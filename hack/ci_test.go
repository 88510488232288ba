package hack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCIScript runs .ci/run with a make that only records its targets: the
// script runs make verify and every tier of make test, prints each tier's
// duration, and on a failure stops, says which tier failed and still
// prints the durations.
func TestCIScript(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fail     string // the target the fake make fails
		prereqs  string // what make -pq test prints
		exit     int
		targets  string
		contains []string
	}{
		{
			name: "all tiers pass", prereqs: "test: unit test-alerts e2e", targets: "verify tools unit test-alerts e2e",
			contains: []string{">> verify (make verify)", ">> e2e (make e2e)", "CI durations:\n  verify Ns\n  tools Ns\n  unit Ns\n  alerts Ns\n  e2e Ns\nCI finished in Ns\n"},
		},
		{
			name: "a tier fails", fail: "unit", prereqs: "test: unit test-alerts e2e", exit: 1, targets: "verify tools unit",
			contains: []string{"CI durations:\n  verify Ns\n  tools Ns\n  unit Ns  FAILED\nCI FAILED in Ns\n"},
		},
		{
			name: "make test has a tier the script does not run", prereqs: "test: unit test-alerts e2e lint", exit: 1, targets: "",
			contains: []string{`make test's prerequisites are not "unit test-alerts e2e": update .ci/run`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			log := filepath.Join(bin, "targets")
			fake := "#!/usr/bin/env bash\n" +
				"if [ \"$1\" = -pq ]; then echo '" + tc.prereqs + "'; exit 0; fi\n" +
				"echo -n \"$1 \" >> " + log + "\n" +
				"[ \"$1\" != '" + tc.fail + "' ]\n"
			if err := os.WriteFile(filepath.Join(bin, "make"), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("../.ci/run")
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != tc.exit {
				t.Errorf("exit %d (%v), want %d:\n%s", code, err, tc.exit, out)
			}
			got, _ := os.ReadFile(log)
			if strings.TrimSpace(string(got)) != tc.targets {
				t.Errorf("targets %q, want %q", got, tc.targets)
			}
			// Durations are a matter of luck: Ns.
			text := regexp.MustCompile(`go version .*\n`).ReplaceAllString(string(out), "")
			text = regexp.MustCompile(` +\d+s`).ReplaceAllString(text, " Ns")
			for _, c := range tc.contains {
				if !strings.Contains(text, c) {
					t.Errorf("the output does not contain %q:\n%s", c, text)
				}
			}
		})
	}
}
