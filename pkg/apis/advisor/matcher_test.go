package advisor

import (
	"strings"
	"testing"
)

func TestParseMatcher(t *testing.T) {
	for _, tc := range []struct {
		in      string
		labels  map[string]string
		matches bool
		err     string
	}{
		{in: `severity="critical"`, labels: map[string]string{"severity": "critical"}, matches: true},
		{in: `severity!=info`, labels: map[string]string{"severity": "info"}},
		{in: `severity=~"critical|warning"`, labels: map[string]string{"severity": "warning"}, matches: true},
		{in: `severity=~"crit"`, labels: map[string]string{"severity": "critical"}}, // anchored
		{in: `namespace!~"openshift-.*"`, labels: map[string]string{"namespace": "default"}, matches: true},
		{in: `team=""`, labels: map[string]string{}, matches: true}, // a missing label is ""
		{in: `severity`, err: "is not a label matcher"},
		{in: `severity=~"("`, err: "invalid regular expression"},
	} {
		m, err := ParseMatcher(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if got := m.Matches(tc.labels); got != tc.matches {
			t.Errorf("%s on %v: %v, want %v", tc.in, tc.labels, got, tc.matches)
		}
	}
}
