package activities

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// moduleRoot is the repository root, two levels above this package.
const moduleRoot = "../.."

// errorTypeDecls parses every Go file of the module (tests included: a test
// type can reach a handler too) and returns, for each type name ending in
// "Error", the files that declare it.
func errorTypeDecls(t *testing.T, root string) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	decls := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", "cdk.out", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				name := spec.(*ast.TypeSpec).Name.Name
				if strings.HasSuffix(name, "Error") {
					rel, _ := filepath.Rel(root, path)
					decls[name] = append(decls[name], rel)
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	return decls
}

// duplicateErrorNames lists the names declared in more than one place.
func duplicateErrorNames(decls map[string][]string) []string {
	var dups []string
	for name, where := range decls {
		if len(where) > 1 {
			dups = append(dups, name+" in "+strings.Join(where, ", "))
		}
	}
	sort.Strings(dups)
	return dups
}

// TestErrorTypeNamesAreUniqueAcrossTheModule: aws-lambda-go reports an
// error by its bare type name and the state machines match on it, so two
// types of one name anywhere in the module are two errors the ASL cannot
// tell apart.
func TestErrorTypeNamesAreUniqueAcrossTheModule(t *testing.T) {
	decls := errorTypeDecls(t, moduleRoot)
	require.Contains(t, decls, "MAASNotFoundError", "the walk must reach shared/maas")
	require.Contains(t, decls, "AmbiguousMachineMatchError", "the walk must reach shared/activities")
	assert.Empty(t, duplicateErrorNames(decls), "error type names must be unique across the module")
}

func TestDuplicateErrorNamesAreFound(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"a", "b"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, dir), 0o750))
		src := "package " + dir + "\n\ntype NotFoundError struct{}\n\ntype " + dir + "OnlyError struct{}\n"
		require.NoError(t, os.WriteFile(filepath.Join(root, dir, "e.go"), []byte(src), 0o600))
	}
	dups := duplicateErrorNames(errorTypeDecls(t, root))
	assert.Equal(t, []string{"NotFoundError in a/e.go, b/e.go"}, dups)
}
