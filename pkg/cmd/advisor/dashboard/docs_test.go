package dashboard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// The documentation quotes, word for word, the title of the page the
// dashboard shows for each refused launch code: used, expired, foreign.
func TestDocsQuoteTheLaunchCodeRefusals(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Now())
	s, err := New(Options{Session: "s", CSRF: "c", LaunchCode: testCode, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if r := s.useLaunchCode(testCode); r != nil {
		t.Fatalf("first use refused: %v", r.Title)
	}
	titles := []string{s.useLaunchCode(testCode).Title, s.useLaunchCode("guess").Title}
	expired, _ := New(Options{Session: "s", CSRF: "c", LaunchCode: testCode, Clock: clock, LaunchTTL: time.Minute})
	clock.SetTime(clock.Now().Add(time.Minute))
	titles = append(titles, expired.useLaunchCode(testCode).Title)

	for _, doc := range []string{"security.md", "walkthrough.md", "operations.md"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", doc))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(raw)), " ")
		for _, title := range titles {
			if !strings.Contains(text, `"`+title+`"`) {
				t.Errorf("docs/%s does not quote %q", doc, title)
			}
		}
	}
}

// The walk-through shows the abort of the rollout page with the texts of
// its templates: the box, the button's hint, the confirmation's buttons.
func TestWalkthroughQuotesTheAbort(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "walkthrough.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(raw)), " ")
	for file, quotes := range map[string][]string{
		"rollout.html": {"Stop this rollout", "You will be asked to confirm. Nothing more of the plan is written; its pools are paused after the node updating now.", "You cannot abort this plan."},
		"abort.html":   {"Yes, abort plan ", "Cancel"},
	} {
		tmpl, err := templateFS.ReadFile("templates/" + file)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range quotes {
			if !strings.Contains(string(tmpl), q) {
				t.Errorf("templates/%s no longer says %q: update the test and docs/walkthrough.md", file, q)
			}
			if !strings.Contains(doc, q) {
				t.Errorf("docs/walkthrough.md does not quote %q of templates/%s", q, file)
			}
		}
	}
}
