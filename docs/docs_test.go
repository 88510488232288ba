// The documentation's own checks, run by make unit and make verify: the
// README stays short, every relative link of README.md, CONTRIBUTING.md,
// docs/*.md, the runbooks and the bench's README leads to a file and
// heading that exist, the package
// map of docs/architecture.md names every package, and its layers list the
// imports go list shows, none upwards but the one they accept
// (layers_test.go).
package docs_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository, seen from this package's directory.
const root = ".."

// maxReadmeLines keeps the README something a newcomer reads to the end;
// the rest belongs in docs/.
const maxReadmeLines = 250

func TestReadmeIsShort(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move the details into docs/ and link them", n, maxReadmeLines)
	}
}

// documents are the Markdown files whose links are checked, relative to
// the repository root.
func documents(t *testing.T) []string {
	t.Helper()
	docs := []string{"README.md", "CONTRIBUTING.md", "test/cmd/bench/README.md"}
	var more []string
	for _, pattern := range []string{"docs/*.md", "docs/runbooks/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, m...)
	}
	for _, m := range more {
		rel, err := filepath.Rel(root, m)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, rel)
	}
	return docs
}

func TestRelativeLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{} // Markdown file (from root) → its heading anchors
	anchorsOf := func(file string) (map[string]bool, error) {
		if a, ok := anchors[file]; ok {
			return a, nil
		}
		raw, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(raw))
		anchors[file] = a
		return a, nil
	}
	for _, doc := range documents(t) {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(raw)) {
			target, broken := resolve(doc, l.target, anchorsOf)
			if broken != "" {
				t.Errorf("%s:%d: link to %q (%s): %s", doc, l.line, l.target, target, broken)
			}
		}
	}
}

// resolve checks one link of doc; broken says what is wrong ("" when the
// link works). Links with a scheme (https:, mailto:) are not checked.
func resolve(doc, target string, anchorsOf func(string) (map[string]bool, error)) (file, broken string) {
	if regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target) || strings.HasPrefix(target, "//") {
		return target, ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	file = doc
	if path != "" {
		file = filepath.Clean(filepath.Join(filepath.Dir(doc), path))
		if strings.HasPrefix(file, "..") {
			return file, "points outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, file)); err != nil {
			return file, "no such file or directory"
		}
	}
	if anchor == "" || !strings.HasSuffix(file, ".md") {
		return file, ""
	}
	a, err := anchorsOf(file)
	if err != nil {
		return file, err.Error()
	}
	if !a[anchor] {
		return file, fmt.Sprintf("no heading with anchor #%s there (anchors: %s)", anchor, strings.Join(sortedKeys(a), ", "))
	}
	return file, ""
}

type link struct {
	target string
	line   int
}

var (
	inlineLink    = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	referenceLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	codeSpan      = regexp.MustCompile("`+[^`]*`+")
	fence         = regexp.MustCompile("^\\s{0,3}(```|~~~)")
)

// links returns the link targets of a Markdown document, leaving out code
// blocks, code spans and HTML comments.
func links(doc string) []link {
	var out []link
	inFence, inComment := false, false
	for i, line := range strings.Split(doc, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		line, inComment = stripComments(line, inComment)
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, link{target: m[1], line: i + 1})
		}
		if m := referenceLink.FindStringSubmatch(line); m != nil {
			out = append(out, link{target: m[1], line: i + 1})
		}
	}
	return out
}

// stripComments removes the parts of line inside <!-- … -->, which may
// span lines; inComment says whether line starts inside one.
func stripComments(line string, inComment bool) (string, bool) {
	var b strings.Builder
	for line != "" {
		if inComment {
			end := strings.Index(line, "-->")
			if end < 0 {
				return b.String(), true
			}
			line, inComment = line[end+3:], false
			continue
		}
		start := strings.Index(line, "<!--")
		if start < 0 {
			b.WriteString(line)
			break
		}
		b.WriteString(line[:start])
		line, inComment = line[start+4:], true
	}
	return b.String(), inComment
}

var (
	heading    = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	notInSlug  = regexp.MustCompile(`[^\p{L}\p{M}\p{N}\p{Pc} -]`)
	emphasised = regexp.MustCompile(`[*~]`)
)

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown document: the text lowercased, punctuation dropped, spaces
// turned into hyphens, and -1, -2, … appended to repeats.
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(doc, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		slug := githubSlug(m[1])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

func githubSlug(text string) string {
	text = mdLink.ReplaceAllString(text, "$1")
	text = strings.ReplaceAll(text, "`", "")
	text = emphasised.ReplaceAllString(text, "")
	text = notInSlug.ReplaceAllString(strings.ToLower(text), "")
	return strings.ReplaceAll(text, " ", "-")
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, "#"+k)
	}
	slices.Sort(keys)
	return keys
}

// TestPackageMapIsComplete: every Go package under pkg/ and cmd/ is in
// the package map of docs/architecture.md, as `path`, or under a
// `path/…` entry that stands for a generated tree.
func TestPackageMapIsComplete(t *testing.T) {
	raw, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	arch := string(raw)
	for _, pkg := range goPackages(t, "pkg", "cmd") {
		covered := strings.Contains(arch, "`"+pkg+"`")
		for dir := filepath.Dir(pkg); !covered && dir != "."; dir = filepath.Dir(dir) {
			covered = strings.Contains(arch, "`"+dir+"/…`")
		}
		if !covered {
			t.Errorf("package %s is not in the package map of docs/architecture.md: add a row saying what its one job is", pkg)
		}
	}
}

// goPackages lists the directories under dirs (relative to the
// repository) that hold Go files other than tests.
func goPackages(t *testing.T, dirs ...string) []string {
	t.Helper()
	var pkgs []string
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && (e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_")) {
				return filepath.SkipDir
			}
			if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			if !slices.Contains(pkgs, rel) {
				pkgs = append(pkgs, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("no Go packages under %v: is the test running in docs/?", dirs)
	}
	return pkgs
}

func TestGithubSlug(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"Quick start", "quick-start"},
		{"Profile → plan → approve → rollout", "profile--plan--approve--rollout"},
		{"Never someone else's pause", "never-someone-elses-pause"},
		{"Web dashboard (`kubectl advisor dashboard`)", "web-dashboard-kubectl-advisor-dashboard"},
		{"The API: `advisor.kubevirt.io/v1alpha1`", "the-api-advisorkubevirtiov1alpha1"},
		{"Transient errors are retried, not failed", "transient-errors-are-retried-not-failed"},
		{"**Bold** and [a link](x.md)", "bold-and-a-link"},
		{"snake_case stays", "snake_case-stays"},
	}
	for _, tt := range tests {
		if got := githubSlug(tt.heading); got != tt.want {
			t.Errorf("githubSlug(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}

func TestHeadingAnchorsNumberRepeats(t *testing.T) {
	got := headingAnchors("# A\n## Notes\n```\n# not a heading\n```\n## Notes\n### Notes ###\n")
	want := []string{"#a", "#notes", "#notes-1", "#notes-2"}
	if !slices.Equal(sortedKeys(got), want) {
		t.Errorf("anchors %v, want %v", sortedKeys(got), want)
	}
}

func TestLinks(t *testing.T) {
	doc := "See [api](docs/api.md#phases) and ![img](images/a.png \"title\").\n" +
		"`[not](a-link.md)` in code, <!-- [hidden](x.md) --> [after](y.md)\n" +
		"<!-- a comment\n[hidden](z.md)\n-->\n" +
		"```sh\n[in](fence.md)\n```\n" +
		"[ref]: docs/ref.md\n" +
		"[web](https://example.com/a_(b))\n"
	var got []string
	for _, l := range links(doc) {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.target))
	}
	want := []string{"1:docs/api.md#phases", "1:images/a.png", "2:y.md", "9:docs/ref.md", "10:https://example.com/a_(b"}
	if !slices.Equal(got, want) {
		t.Errorf("links() = %q, want %q", got, want)
	}
}
