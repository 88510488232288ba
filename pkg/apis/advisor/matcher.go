package advisor

import (
	"fmt"
	"regexp"
)

// +k8s:deepcopy-gen=false

// Matcher is a label matcher as Prometheus and Alertmanager write them:
// name=value, name!=value, name=~regex, name!~regex (regexes anchored).
type Matcher struct {
	Label string
	Op    string
	Value string
	re    *regexp.Regexp
}

var matcherSyntax = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*(.*?)\s*$`)

// ParseMatcher parses one matcher; the value may be quoted.
func ParseMatcher(s string) (Matcher, error) {
	m := matcherSyntax.FindStringSubmatch(s)
	if m == nil {
		return Matcher{}, fmt.Errorf("%q is not a label matcher: write name=value, name!=value, name=~regex or name!~regex", s)
	}
	value := m[3]
	if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
		value = value[1 : len(value)-1]
	}
	out := Matcher{Label: m[1], Op: m[2], Value: value}
	if out.Op == "=~" || out.Op == "!~" {
		re, err := regexp.Compile("^(?:" + value + ")$")
		if err != nil {
			return Matcher{}, fmt.Errorf("%q: invalid regular expression: %v", s, err)
		}
		out.re = re
	}
	return out, nil
}

// Matches says whether labels match; a missing label is "".
func (m Matcher) Matches(labels map[string]string) bool {
	v := labels[m.Label]
	switch m.Op {
	case "=":
		return v == m.Value
	case "!=":
		return v != m.Value
	case "=~":
		return m.re.MatchString(v)
	default:
		return !m.re.MatchString(v)
	}
}

func (m Matcher) String() string {
	return fmt.Sprintf("%s%s%q", m.Label, m.Op, m.Value)
}
