package aslsrc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Layout of the statemachines directory.
const (
	// SourceDir holds the sources, relative to the statemachines directory.
	SourceDir = "src"
	// SharedFile is read in front of every source.
	SharedFile = "errors.yaml"
	// sourceSuffix ends a source's name; the JSON's is ".asl.json".
	sourceSuffix = ".asl.yaml"
)

// Machine is one rendered state machine.
type Machine struct {
	// JSONPath is where the rendered JSON belongs.
	JSONPath string
	// JSON is the rendered document.
	JSON []byte
}

// RenderAll renders every source under dir/src, sorted by name.
func RenderAll(dir string) ([]Machine, error) {
	shared, err := os.ReadFile(filepath.Join(dir, SourceDir, SharedFile)) //nolint:gosec // the repository's own directory, named by the developer
	if err != nil {
		return nil, err
	}
	srcs, err := filepath.Glob(filepath.Join(dir, SourceDir, "*"+sourceSuffix))
	if err != nil {
		return nil, err
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("no %s sources in %s", sourceSuffix, filepath.Join(dir, SourceDir))
	}
	out := make([]Machine, 0, len(srcs))
	for _, src := range srcs {
		b, err := os.ReadFile(src) //nolint:gosec // a source found under that directory
		if err != nil {
			return nil, err
		}
		j, err := Render(shared, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		name := strings.TrimSuffix(filepath.Base(src), sourceSuffix)
		out = append(out, Machine{JSONPath: filepath.Join(dir, name+".asl.json"), JSON: j})
	}
	return out, nil
}

// WriteAll renders every source under dir/src and writes the JSON files
// that differ.
func WriteAll(dir string) error {
	ms, err := RenderAll(dir)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if cur, err := os.ReadFile(m.JSONPath); err == nil && bytes.Equal(cur, m.JSON) {
			continue
		}
		if err := os.WriteFile(m.JSONPath, m.JSON, 0o644); err != nil { //nolint:gosec // a committed file, readable like the rest of the tree
			return err
		}
	}
	return nil
}
