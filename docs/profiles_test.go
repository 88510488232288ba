package docs_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
)

var update = flag.Bool("update", false, "rewrite the generated parts of the docs")

const (
	profileTableStart = "<!-- GENERATED from the catalogue (profiles.Metadata) by `go test ./docs -update`: do not edit. -->\n"
	profileTableEnd   = "<!-- END GENERATED -->"
)

// profileTable is the table of the profiles of docs/api.md: what each
// declares of itself in its package.
func profileTable() string {
	var b strings.Builder
	b.WriteString(profileTableStart)
	b.WriteString("| profile | advertised | options | writes (object: fields) | worst impact |\n|---|---|---|---|---|\n")
	c := catalog.Default()
	for _, name := range c.Names() {
		p, _ := c.Get(name)
		md := p.Metadata()
		advertised := "no"
		if md.Advertised {
			advertised = "yes"
		}
		options := "–"
		if md.Options != "" {
			options = "`spec.options." + md.Options + "`"
		}
		var writes []string
		for _, w := range md.Writes {
			obj := w.Name
			if w.Namespace != "" {
				obj = w.Namespace + "/" + obj
			}
			verbs := "patched"
			if w.Create {
				verbs = "created"
			}
			if w.Delete {
				verbs += ", pruned"
			}
			writes = append(writes, fmt.Sprintf("%s `%s` (%s): `%s`", w.Resource.Resource, obj, verbs, strings.Join(w.Fields, "`, `")))
		}
		fmt.Fprintf(&b, "| [`%s`](%s) | %s | %s | %s | %s |\n", name, profilePage(name), advertised, options, strings.Join(writes, "; "), md.Level)
	}
	return b.String()
}

// profilePage is a profile's page, or its section of this one.
func profilePage(name string) string {
	if _, err := os.Stat("profiles/" + name + ".md"); err == nil {
		return "profiles/" + name + ".md"
	}
	return "#profiles"
}

// TestProfileTable: docs/api.md's table of profiles is the catalogue's
// (go test ./docs -update rewrites it).
func TestProfileTable(t *testing.T) {
	raw, err := os.ReadFile("api.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	from := strings.Index(s, profileTableStart)
	to := strings.Index(s, profileTableEnd)
	if from < 0 || to < from {
		t.Fatalf("api.md has no %q ... %q block", strings.TrimSpace(profileTableStart), profileTableEnd)
	}
	want := profileTable()
	if s[from:to] == want {
		return
	}
	if !*update {
		t.Fatalf("api.md's table of profiles is not the catalogue's: run `go test ./docs -update`\nit holds\n%s\nthe catalogue makes\n%s", s[from:to], want)
	}
	if err := os.WriteFile("api.md", []byte(s[:from]+want+s[to:]), 0o644); err != nil {
		t.Fatal(err)
	}
}
