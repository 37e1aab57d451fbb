package design

import (
	"fmt"
	"strings"
)

// Object kinds as errors, provenance and plans name them.
const (
	KindHostProfile     = "host_profile"
	KindHardwareProfile = "hardware_profile"
	KindNetwork         = "network"
	KindNetworkLink     = "network_link"
	KindNode            = "node"
)

// Problem is one thing wrong with a design: which document, which object
// and which field, and why.
type Problem struct {
	Document string `json:"document"`
	Kind     string `json:"kind"`
	Object   string `json:"object"`
	Field    string `json:"field"`
	Message  string `json:"message"`
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: %s %q: %s %s", p.Document, p.Kind, p.Object, p.Field, p.Message)
}

// InvalidDesignError lists every problem found; a design with any is never
// stored nor acted on.
type InvalidDesignError struct {
	Problems []Problem `json:"problems"`
}

func (e *InvalidDesignError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("invalid design (%d problems): %s", len(e.Problems), strings.Join(lines, "; "))
}

// problems collects Problems; err returns nil when there are none.
type problems []Problem

func (ps *problems) add(doc, kind, object, field, format string, args ...any) {
	*ps = append(*ps, Problem{Document: doc, Kind: kind, Object: object, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &InvalidDesignError{Problems: ps}
}
