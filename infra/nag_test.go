package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var validationReportRE = regexp.MustCompile(`(/\S+validation-report\.json)`)

// nagFindings synthesises the repository with ctx under cdk-nag's
// AwsSolutions rules and returns every unsuppressed finding (errors and
// warnings). change, when set, alters the stack before the synthesis.
func nagFindings(t *testing.T, ctx map[string]any, change func(awscdk.Stack)) (findings []string) {
	t.Helper()
	fns, err := DiscoverFunctions(filepath.Join("..", functionsDir))
	require.NoError(t, err)
	t.Setenv(envAssetDir, fixtureAssets(t, fns))
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	stack, err := buildStack(app, "..", os.Getenv)
	require.NoError(t, err)
	if change != nil {
		change(stack)
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	// An error finding fails the synthesis with a validation report.
	defer func() {
		if r := recover(); r != nil {
			m := validationReportRE.FindStringSubmatch(fmt.Sprint(r))
			if m == nil {
				panic(r)
			}
			b, err := os.ReadFile(m[1])
			require.NoError(t, err, "the validation report of %v", r)
			findings = append(findings, "synthesis failed: "+string(b))
		}
	}()
	ann := assertions.Annotations_FromStack(stack)
	rule := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-"))
	for _, m := range append(*ann.FindError(jsii.String("*"), rule), *ann.FindWarning(jsii.String("*"), rule)...) {
		// The assertions module still returns cxapi's SynthesisMessage.
		data := fmt.Sprint(m.Entry.Data) //nolint:staticcheck // SA1019: no other type carries the annotation

		if i := strings.Index(data, ": "); i > 0 {
			data = data[:i]
		}
		findings = append(findings, data+" on "+*m.Id) //nolint:staticcheck // SA1019: as above
	}
	sort.Strings(findings)
	return findings
}

// TestAwsSolutionsChecks runs cdk-nag's AwsSolutions rules over the
// production stage with every option and over a development stage with
// its own Cognito pool: no finding may be left without a suppression, and
// each suppression carries its reason where the construct is made.
func TestAwsSolutionsChecks(t *testing.T) {
	requireNode(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, []byte(testCA), 0o600))
	t.Run("production", func(t *testing.T) {
		assert.Empty(t, nagFindings(t, fullContext(t, caFile), nil))
	})
	t.Run("development with Cognito", func(t *testing.T) {
		assert.Empty(t, nagFindings(t, cdkContext(t, map[string]any{ctxStage: devStage, ctxCognito: "true"}), nil))
	})
	t.Run("a new construct that breaks a rule is a finding", func(t *testing.T) {
		f := nagFindings(t, cdkContext(t, map[string]any{ctxStage: devStage}), func(s awscdk.Stack) {
			awssqs.NewQueue(s, jsii.String("PlainQueue"), nil) // no dead-letter queue, no TLS-only policy
		})
		require.NotEmpty(t, f)
		assert.Contains(t, strings.Join(f, "\n"), "AwsSolutions-SQS")
	})
}
