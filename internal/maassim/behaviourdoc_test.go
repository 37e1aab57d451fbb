package maassim

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// behaviourDoc is the page the simulator (and every MAAS comment in the
// repository) is built to.
const behaviourDoc = "docs/maas-behaviour.md"

var (
	// citationPattern finds "maas-behaviour §5", "maas-behaviour §9, §12",
	// "maas-behaviour §9–§13" and "maas-behaviour §14.8".
	citationPattern = regexp.MustCompile(`maas-behaviour\s+((?:§\d+(?:\.\d+)?(?:\s*(?:,|–|-|and)\s*)?)+)`)
	sectionPattern  = regexp.MustCompile(`§(\d+)(?:\.(\d+))?`)
	// commentBreak joins a citation that a comment wrapped onto the next line.
	commentBreak = regexp.MustCompile(`\n\s*(?://|#)?\s*`)
)

// TestBehaviourCitationsResolve: every "maas-behaviour §N" in the repository
// names a section docs/maas-behaviour.md has (a "## N." heading, or item N of
// the numbered list under "## 14.").
func TestBehaviourCitationsResolve(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, behaviourDoc))
	require.NoError(t, err)
	sections, quirks := docSections(string(doc))
	require.Len(t, sections, 15, "§1 … §15, the reference's numbering")
	require.Len(t, quirks, 15, "§14.1 … §14.15")

	cited := map[string][]string{}
	repo := os.DirFS(root)
	err = fs.WalkDir(repo, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "cdk.out", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		switch path.Ext(rel) {
		case ".go", ".md", ".json":
		default:
			return nil
		}
		if rel == behaviourDoc {
			return nil
		}
		raw, err := fs.ReadFile(repo, rel)
		if err != nil {
			return err
		}
		text := commentBreak.ReplaceAllString(string(raw), " ")
		for _, m := range citationPattern.FindAllStringSubmatch(text, -1) {
			for _, s := range sectionPattern.FindAllStringSubmatch(m[1], -1) {
				cited[s[0]] = append(cited[s[0]], rel)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, cited, "the repository cites maas-behaviour sections")

	keys := make([]string, 0, len(cited))
	for k := range cited {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, ref := range keys {
		m := sectionPattern.FindStringSubmatch(ref)
		if m[2] == "" {
			assert.True(t, sections[m[1]], "%s is cited by %v but %s has no such section", ref, cited[ref], behaviourDoc)
			continue
		}
		assert.Equal(t, "14", m[1], "%s cited by %v: only §14 has numbered items", ref, cited[ref])
		assert.True(t, quirks[m[2]], "%s is cited by %v but %s has no such quirk", ref, cited[ref], behaviourDoc)
	}
}

// docSections returns the "## N." section numbers and the numbered items of
// section 14.
func docSections(doc string) (sections, quirks map[string]bool) {
	sections, quirks = map[string]bool{}, map[string]bool{}
	heading := regexp.MustCompile(`^## (\d+)\. `)
	item := regexp.MustCompile(`^(\d+)\. \*\*`)
	current := ""
	for _, line := range strings.Split(doc, "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			current = m[1]
			sections[current] = true
			continue
		}
		if current == "14" {
			if m := item.FindStringSubmatch(line); m != nil {
				quirks[m[1]] = true
			}
		}
	}
	return sections, quirks
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "go.mod not found above the test")
		dir = parent
	}
}
