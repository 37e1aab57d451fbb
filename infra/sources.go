package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Repository paths the stack is built from, relative to the repository root.
const (
	functionsDir  = "functions"
	onboardingASL = "statemachines/onboarding.asl.json"
	// decommissionASL is the second state machine (infra/decommission.go).
	decommissionASL = "statemachines/decommission.asl.json"
)

// Functions with permissions beyond the common set. They are named here and
// not in shared/config because no Go code outside infra needs the names yet.
const (
	// functionAPI serves the admin REST API and the node enrollment route.
	functionAPI = "api"
	// functionAwaitEnrollment parks the onboarding on a task token and
	// completes it itself when the node enrolled before the wait began.
	functionAwaitEnrollment = "await-enrollment"
)

// Placeholders an ASL file may use besides ${XFunctionArn}: direct service
// integrations with the bus or the table need their names.
const (
	placeholderEventBusName = "EventBusName"
	placeholderEventBusArn  = "EventBusArn"
	placeholderTableName    = "TableName"
)

// functionArnSuffix ends every placeholder that names a function's ARN.
const functionArnSuffix = "FunctionArn"

var (
	functionNameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	placeholderRE  = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)
)

// Sources is what the stack is built from, read from the repository.
type Sources struct {
	// Functions are the kebab-case names of functions/<name>/main.go, sorted.
	Functions []string
	// OnboardingASL is the text of statemachines/onboarding.asl.json.
	OnboardingASL string
	// FunctionPlaceholders maps each ${XFunctionArn} placeholder of the ASL
	// (without ${}) to the function whose ARN replaces it.
	FunctionPlaceholders map[string]string
	// ResourcePlaceholders are the other placeholders of the ASL, each one of
	// EventBusName, EventBusArn or TableName.
	ResourcePlaceholders []string
	// DecommissionASL and DecommissionPlaceholders are the same for
	// statemachines/decommission.asl.json, whose only placeholders are
	// functions.
	DecommissionASL          string
	DecommissionPlaceholders map[string]string
	// MachineWatchASL and MachineWatchPlaceholders are the same for
	// statemachines/machine-watch.asl.json (infra/watch.go).
	MachineWatchASL          string
	MachineWatchPlaceholders map[string]string
	// MachineWatchTaskTimeout is the TimeoutSeconds of its Task states,
	// which bounds the function they invoke.
	MachineWatchTaskTimeout int
}

// LoadSources reads the function set and the onboarding ASL under root and
// resolves the ASL's placeholders. It fails when the ASL is missing or
// invalid JSON, or names a placeholder nothing provides.
func LoadSources(root string) (Sources, error) {
	fns, err := DiscoverFunctions(filepath.Join(root, functionsDir))
	if err != nil {
		return Sources{}, err
	}
	aslPath := filepath.Join(root, onboardingASL)
	asl, err := os.ReadFile(aslPath) //nolint:gosec // G304: a file of this repository, under the root the app is given
	if err != nil {
		return Sources{}, fmt.Errorf("read onboarding state machine: %w", err)
	}
	if _, err := StateNames(asl); err != nil {
		return Sources{}, fmt.Errorf("%s: %w", aslPath, err)
	}
	byFn, other, err := ResolvePlaceholders(asl, fns)
	if err != nil {
		return Sources{}, fmt.Errorf("%s: %w", aslPath, err)
	}
	src := Sources{Functions: fns, OnboardingASL: string(asl), FunctionPlaceholders: byFn, ResourcePlaceholders: other}
	if err := loadDecommission(root, &src); err != nil {
		return Sources{}, err
	}
	if err := loadMachineWatch(root, &src); err != nil {
		return Sources{}, err
	}
	return src, nil
}

// DiscoverFunctions lists the directories of dir that hold a main.go: one
// Lambda function each. Names must be kebab-case, because they become
// construct IDs, asset directories and ASL placeholders.
func DiscoverFunctions(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list functions: %w", err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		_, err := os.Stat(filepath.Join(dir, e.Name(), "main.go"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list functions: %w", err)
		}
		if !functionNameRE.MatchString(e.Name()) {
			return nil, fmt.Errorf("function directory %q is not kebab-case (a-z, 0-9, single hyphens)", e.Name())
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// CamelCase turns a kebab-case function name into the CamelCase form used
// in construct IDs and placeholders: discover-machine → DiscoverMachine.
func CamelCase(kebab string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(kebab, "-") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	return b.String()
}

// ResolvePlaceholders maps every ${XFunctionArn} placeholder in asl to the
// function named X in kebab-case, and returns the other placeholders, which
// must be resource names infra provides.
//
// X matches a function when it equals the function's CamelCase form or,
// failing that, when it equals the name without hyphens ignoring case, so
// that initialisms written as in Go (PreflightPXE, ApplyRoCE) still find
// preflight-pxe and apply-roce. Two functions matching one placeholder is
// an error rather than a guess.
func ResolvePlaceholders(asl []byte, functions []string) (map[string]string, []string, error) {
	byFn := map[string]string{}
	var other, unknown []string
	for _, m := range placeholderRE.FindAllSubmatch(asl, -1) {
		name := string(m[1])
		if _, done := byFn[name]; done || slices.Contains(other, name) || slices.Contains(unknown, name) {
			continue
		}
		switch name {
		case placeholderEventBusName, placeholderEventBusArn, placeholderTableName:
			other = append(other, name)
			continue
		}
		x, ok := strings.CutSuffix(name, functionArnSuffix)
		if !ok || x == "" {
			unknown = append(unknown, name)
			continue
		}
		fn, err := matchFunction(x, functions)
		if err != nil {
			return nil, nil, fmt.Errorf("placeholder ${%s}: %w", name, err)
		}
		if fn == "" {
			unknown = append(unknown, name)
			continue
		}
		byFn[name] = fn
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, nil, &UnresolvedPlaceholderError{Names: unknown, Functions: functions}
	}
	sort.Strings(other)
	return byFn, other, nil
}

// matchFunction returns the function X names, "" when none does.
func matchFunction(x string, functions []string) (string, error) {
	for _, fn := range functions {
		if CamelCase(fn) == x {
			return fn, nil
		}
	}
	var folded []string
	for _, fn := range functions {
		if strings.EqualFold(strings.ReplaceAll(fn, "-", ""), x) {
			folded = append(folded, fn)
		}
	}
	switch len(folded) {
	case 0:
		return "", nil
	case 1:
		return folded[0], nil
	default:
		return "", fmt.Errorf("matches functions %s", strings.Join(folded, ", "))
	}
}

// UnresolvedPlaceholderError: the ASL names placeholders that no function
// directory and no infra resource provides.
type UnresolvedPlaceholderError struct {
	Names     []string
	Functions []string
}

func (e *UnresolvedPlaceholderError) Error() string {
	ph := make([]string, len(e.Names))
	for i, n := range e.Names {
		ph[i] = "${" + n + "}"
	}
	return fmt.Sprintf("no function or resource provides %s: a ${XFunctionArn} placeholder needs functions/<x-in-kebab-case>/main.go "+
		"(functions found: %s); other placeholders may only be %s, %s or %s",
		strings.Join(ph, ", "), strings.Join(e.Functions, ", "),
		placeholderEventBusName, placeholderEventBusArn, placeholderTableName)
}

// StateNames returns the name of every state in an ASL document, including
// the states of Parallel branches and Map processors, sorted. It fails when
// asl is not JSON or has no States.
func StateNames(asl []byte) ([]string, error) {
	var def aslMachine
	if err := json.Unmarshal(asl, &def); err != nil {
		return nil, fmt.Errorf("parse ASL: %w", err)
	}
	if len(def.States) == 0 {
		return nil, errors.New("ASL has no States")
	}
	var names []string
	def.collect(&names)
	sort.Strings(names)
	return names, nil
}

// aslMachine is the part of an ASL document that holds states.
type aslMachine struct {
	States map[string]aslState `json:"States"`
}

type aslState struct {
	Branches      []aslMachine `json:"Branches"`
	ItemProcessor *aslMachine  `json:"ItemProcessor"`
	Iterator      *aslMachine  `json:"Iterator"`
}

func (m aslMachine) collect(names *[]string) {
	for name, s := range m.States {
		*names = append(*names, name)
		for _, b := range s.Branches {
			b.collect(names)
		}
		if s.ItemProcessor != nil {
			s.ItemProcessor.collect(names)
		}
		if s.Iterator != nil {
			s.Iterator.collect(names)
		}
	}
}
