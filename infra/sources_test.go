package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCamelCase(t *testing.T) {
	tests := []struct{ in, want string }{
		{"api", "Api"},
		{"discover-machine", "DiscoverMachine"},
		{"preflight-pxe", "PreflightPxe"},
		{"check-completion-gates", "CheckCompletionGates"},
		{"a1-b2", "A1B2"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, CamelCase(tt.in))
		})
	}
}

func TestResolvePlaceholders(t *testing.T) {
	fns := []string{"api", "apply-roce", "discover-machine", "preflight-pxe"}
	tests := []struct {
		name       string
		asl        string
		functions  []string
		wantFn     map[string]string
		wantOther  []string
		unresolved []string
		wantErr    string
	}{
		{
			name:   "kebab to CamelCase, repeated placeholder counted once",
			asl:    `{"a":"${DiscoverMachineFunctionArn}","b":"${DiscoverMachineFunctionArn}"}`,
			wantFn: map[string]string{"DiscoverMachineFunctionArn": "discover-machine"},
		},
		{
			name: "initialisms written as in Go",
			asl:  `{"a":"${PreflightPXEFunctionArn}","b":"${ApplyRoCEFunctionArn}","c":"${PreflightPxeFunctionArn}"}`,
			wantFn: map[string]string{
				"PreflightPXEFunctionArn": "preflight-pxe",
				"ApplyRoCEFunctionArn":    "apply-roce",
				"PreflightPxeFunctionArn": "preflight-pxe",
			},
		},
		{
			name:      "resource placeholders",
			asl:       `{"a":"${TableName}","b":"${EventBusName}","c":"${EventBusArn}","d":"${EventBusName}"}`,
			wantFn:    map[string]string{},
			wantOther: []string{"EventBusArn", "EventBusName", "TableName"},
		},
		{
			name:       "function that does not exist",
			asl:        `{"a":"${CommissionMachineFunctionArn}","b":"${DiscoverMachineFunctionArn}"}`,
			unresolved: []string{"CommissionMachineFunctionArn"},
		},
		{
			name:       "placeholder that is neither a function nor a resource",
			asl:        `{"a":"${MaasURL}","b":"${FunctionArn}"}`,
			unresolved: []string{"FunctionArn", "MaasURL"},
		},
		{
			name:      "two functions fold to one placeholder",
			asl:       `{"a":"${AbcFunctionArn}"}`,
			functions: []string{"a-bc", "ab-c"},
			wantErr:   "matches functions a-bc, ab-c",
		},
		{
			name:   "JSONPath and intrinsic text is not a placeholder",
			asl:    `{"a.$":"$.x","b.$":"States.Format('{}', $.y)","c":"$${}"}`,
			wantFn: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			functions := tt.functions
			if functions == nil {
				functions = fns
			}
			byFn, other, err := ResolvePlaceholders([]byte(tt.asl), functions)
			switch {
			case tt.unresolved != nil:
				var unres *UnresolvedPlaceholderError
				require.ErrorAs(t, err, &unres)
				assert.Equal(t, tt.unresolved, unres.Names)
				assert.Contains(t, err.Error(), "${"+tt.unresolved[0]+"}")
				assert.Contains(t, err.Error(), "functions found: api, apply-roce")
			case tt.wantErr != "":
				require.ErrorContains(t, err, tt.wantErr)
			default:
				require.NoError(t, err)
				assert.Equal(t, tt.wantFn, byFn)
				assert.Equal(t, tt.wantOther, other)
			}
		})
	}
}

func TestDiscoverFunctions(t *testing.T) {
	tests := []struct {
		name    string
		files   []string
		want    []string
		wantErr string
	}{
		{
			name:  "directories with a main.go, sorted",
			files: []string{"discover-machine/main.go", "api/main.go", "api/handler.go", "no-main/README.md", "stray.go"},
			want:  []string{"api", "discover-machine"},
		},
		{
			name:    "name that is not kebab-case",
			files:   []string{"api/main.go", "Discover_Machine/main.go"},
			wantErr: `"Discover_Machine" is not kebab-case`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				writeFile(t, filepath.Join(dir, f), "package main\n")
			}
			got, err := DiscoverFunctions(dir)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}

	t.Run("missing directory", func(t *testing.T) {
		_, err := DiscoverFunctions(filepath.Join(t.TempDir(), "functions"))
		assert.ErrorContains(t, err, "list functions")
	})
}

func TestStateNames(t *testing.T) {
	tests := []struct {
		name    string
		asl     string
		want    []string
		wantErr string
	}{
		{
			name: "nested Parallel branches and Map processors",
			asl: `{"StartAt":"P","States":{
				"P":{"Type":"Parallel","Branches":[{"StartAt":"B1","States":{"B1":{"Type":"Succeed"}}}],"Next":"M"},
				"M":{"Type":"Map","ItemProcessor":{"StartAt":"I1","States":{"I1":{"Type":"Succeed"}}},"Next":"L"},
				"L":{"Type":"Map","Iterator":{"StartAt":"I2","States":{"I2":{"Type":"Succeed"}}},"End":true}}}`,
			want: []string{"B1", "I1", "I2", "L", "M", "P"},
		},
		{name: "not JSON", asl: `{"StartAt":`, wantErr: "parse ASL"},
		{name: "no states", asl: `{"StartAt":"A","States":{}}`, wantErr: "ASL has no States"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StateNames([]byte(tt.asl))
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLoadSources(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "onboarding.asl.json"))
	require.NoError(t, err)

	t.Run("fixture repository", func(t *testing.T) {
		root := fixtureRoot(t)
		src, err := LoadSources(root)
		require.NoError(t, err)
		assert.Equal(t, fixtureFunctions, src.Functions)
		assert.Equal(t, string(fixture), src.OnboardingASL)
		assert.Equal(t, map[string]string{
			"ValidateOnboardingFunctionArn": "validate-onboarding",
			"DiscoverMachineFunctionArn":    "discover-machine",
			"PreflightPXEFunctionArn":       "preflight-pxe",
			"AwaitEnrollmentFunctionArn":    "await-enrollment",
			"FinishOnboardingFunctionArn":   "finish-onboarding",
		}, src.FunctionPlaceholders)
		assert.Equal(t, []string{"EventBusName"}, src.ResourcePlaceholders)
	})

	t.Run("ASL references a function that does not exist", func(t *testing.T) {
		root := fixtureRoot(t)
		require.NoError(t, os.RemoveAll(filepath.Join(root, functionsDir, "preflight-pxe")))
		_, err := LoadSources(root)
		var unres *UnresolvedPlaceholderError
		require.ErrorAs(t, err, &unres)
		assert.Equal(t, []string{"PreflightPXEFunctionArn"}, unres.Names)
		assert.ErrorContains(t, err, onboardingASL)
	})

	t.Run("no ASL", func(t *testing.T) {
		root := fixtureRoot(t)
		require.NoError(t, os.Remove(filepath.Join(root, onboardingASL)))
		_, err := LoadSources(root)
		assert.ErrorContains(t, err, "read onboarding state machine")
	})

	t.Run("ASL is not JSON", func(t *testing.T) {
		root := fixtureRoot(t)
		writeFile(t, filepath.Join(root, onboardingASL), `{"StartAt": "A",`)
		_, err := LoadSources(root)
		assert.ErrorContains(t, err, "parse ASL")
	})
}

func TestValidateProps(t *testing.T) {
	valid := func(t *testing.T) *MaasflowStackProps {
		t.Helper()
		root := fixtureRoot(t)
		src, err := LoadSources(root)
		require.NoError(t, err)
		return &MaasflowStackProps{Stage: devStage, Sources: src, AssetDir: fixtureAssets(t, src.Functions)}
	}
	tests := []struct {
		name    string
		mutate  func(p *MaasflowStackProps)
		wantErr []string
	}{
		{name: "valid", mutate: func(*MaasflowStackProps) {}},
		{
			name: "no api function",
			mutate: func(p *MaasflowStackProps) {
				p.Sources.Functions = p.Sources.Functions[1:] // api sorts first
			},
			wantErr: []string{"functions/api/main.go is missing"},
		},
		{
			name: "missing bootstrap",
			mutate: func(p *MaasflowStackProps) {
				require.NoError(t, os.Remove(filepath.Join(p.AssetDir, "discover-machine", "bootstrap")))
			},
			wantErr: []string{"bootstrap under", "for discover-machine: run make build first"},
		},
		{
			name:    "no asset directory",
			mutate:  func(p *MaasflowStackProps) { p.AssetDir = "" },
			wantErr: []string{"asset directory is not set"},
		},
		{
			name: "state machine invokes the api function",
			mutate: func(p *MaasflowStackProps) {
				p.Sources.FunctionPlaceholders["ApiFunctionArn"] = "api"
			},
			wantErr: []string{"the api function cannot be a state machine task"},
		},
		{
			name: "every problem reported at once",
			mutate: func(p *MaasflowStackProps) {
				p.Sources.OnboardingASL = ""
				p.Sources.FunctionPlaceholders["GoneFunctionArn"] = "gone"
			},
			wantErr: []string{"onboarding ASL is empty", "names function gone, which is not in functions/"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := valid(t)
			tt.mutate(p)
			err := p.Validate()
			if len(tt.wantErr) == 0 {
				assert.NoError(t, err)
				return
			}
			for _, want := range tt.wantErr {
				assert.ErrorContains(t, err, want)
			}
		})
	}

	t.Run("nil props", func(t *testing.T) {
		var p *MaasflowStackProps
		assert.ErrorContains(t, p.Validate(), "stack props are required")
	})
}

// fixtureFunctions are the function directories of the fixture repository:
// the ones testdata/onboarding.asl.json invokes, the api, and one the
// state machine does not invoke.
var fixtureFunctions = []string{
	"api", "await-enrollment", "discover-machine", "finish-onboarding",
	"preflight-pxe", "reconcile", "validate-onboarding",
}

// fixtureRoot builds a repository with testdata/onboarding.asl.json as the
// onboarding ASL and a main.go for each fixture function.
func fixtureRoot(t *testing.T) string {
	t.Helper()
	asl, err := os.ReadFile(filepath.Join("testdata", "onboarding.asl.json"))
	require.NoError(t, err)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, onboardingASL), string(asl))
	for _, fn := range fixtureFunctions {
		writeFile(t, filepath.Join(root, functionsDir, fn, "main.go"), "package main\n\nfunc main() {}\n")
	}
	return root
}

// fixtureAssets stands in for make build: a placeholder bootstrap per
// function, which is all Code_FromAsset needs.
func fixtureAssets(t *testing.T, functions []string) string {
	t.Helper()
	dir := t.TempDir()
	for _, fn := range functions {
		writeFile(t, filepath.Join(dir, fn, "bootstrap"), "#!/bin/sh\n")
	}
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o750))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}
