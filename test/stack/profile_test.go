package stack

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// localstackServiceOf maps a CloudFormation namespace, or an IAM action
// prefix, to the LocalStack service (its SERVICES name) behind it.
var localstackServiceOf = map[string]string{
	"AWS::ApiGatewayV2": "apigateway", "AWS::Lambda": "lambda", "AWS::IAM": "iam", "AWS::DynamoDB": "dynamodb",
	"AWS::StepFunctions": "stepfunctions", "AWS::Events": "events", "AWS::EventSchemas": "schemas", "AWS::Scheduler": "scheduler",
	"AWS::Logs": "logs", "AWS::CloudWatch": "cloudwatch", "AWS::SNS": "sns", "AWS::SQS": "sqs", "AWS::KMS": "kms",
	"AWS::Backup": "backup", "AWS::Cognito": "cognito-idp", "AWS::WAFv2": "wafv2", "AWS::RolesAnywhere": "rolesanywhere",
	"AWS::EC2": "ec2", "AWS::SecretsManager": "secretsmanager", "AWS::CDK": "cloudformation",
	"states": "stepfunctions", "dynamodb": "dynamodb", "events": "events", "secretsmanager": "secretsmanager", "sts": "sts",
	"lambda": "lambda", "sqs": "sqs", "kms": "kms", "logs": "logs", "cloudwatch": "cloudwatch",
}

// Services the LocalStack deploy needs beyond the template's: cdk
// bootstrap's stack (its staging bucket, image repository, version
// parameter and roles) and the CLI's own calls.
var bootstrapServices = []string{"cloudformation", "s3", "ecr", "ssm", "iam", "sts"}

// transportTestServices are what make localstack-test's second step uses:
// the connector's AWS transport tests (shared/connector/sqsrelay, test/e2e)
// make a request queue and reply table of their own.
var transportTestServices = []string{"sqs", "dynamodb"}

// connectorCAOnly are the services the lane's template uses only because
// it is synthesized with the connector CA, which make localstack-deploy
// does not pass (LocalStack has no key of the deployment's KMS to give).
var connectorCAOnly = map[string]bool{"kms": true, "rolesanywhere": true, "sqs": true}

// TestLocalStackProfile checks the LocalStack profile against the
// template the lane synthesizes: an image pinned to a release that starts
// only with an auth token, on loopback; exactly the services the template,
// its functions' calls, cdk bootstrap and the connector transport tests
// use; and the fence every make target's AWS call goes through.
func TestLocalStackProfile(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	compose, err := os.ReadFile(filepath.Join(root, "localstack", "compose.yaml"))
	require.NoError(t, err)
	image := regexp.MustCompile(`(?m)^\s*image:\s*(\S+)\s*$`).FindSubmatch(compose)
	require.NotNil(t, image, "compose.yaml names an image")
	assert.Regexp(t, `^localstack/localstack:\d{4}\.\d{2}\.\d+$`, string(image[1]), "pinned to a release, never stable or latest")
	assert.Contains(t, string(compose), `"127.0.0.1:4566:4566"`, "LocalStack listens on loopback only")
	assert.Contains(t, string(compose), "LOCALSTACK_AUTH_TOKEN=${LOCALSTACK_AUTH_TOKEN:?", "compose refuses to start without a token")

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	listed := regexp.MustCompile(`(?m)^LOCALSTACK_SERVICES\s*:=\s*(\S+)\s*$`).FindSubmatch(makefile)
	require.NotNil(t, listed, "the Makefile lists LocalStack's services")
	assert.Contains(t, string(compose), "SERVICES=${LOCALSTACK_SERVICES:?", "compose takes the Makefile's list")

	tpl := freshTemplate(t)
	need := map[string]string{}
	for _, s := range bootstrapServices {
		need[s] = "cdk bootstrap"
	}
	for id, r := range tpl.Resources {
		ns := r.Type[:strings.LastIndex(r.Type, "::")]
		svc, ok := localstackServiceOf[ns]
		require.True(t, ok, "resource %s is a %s: say which LocalStack service serves it", id, r.Type)
		need[svc] = r.Type
	}
	res := &resolver{t: tpl, apiEndpoint: "https://api.lane.test",
		params: map[string]any{"JwtIssuer": "https://issuer.lane.test", "JwtAudience": []any{"lane-cli"}, "BootstrapVersion": "21"}}
	p, err := loadPolicies(res)
	require.NoError(t, err)
	for role, sts := range p.statements {
		for _, st := range sts {
			for _, a := range st.Actions {
				prefix, _, _ := strings.Cut(a, ":")
				if prefix == "xray" {
					continue // the Lambda service's traces, not a call of the code
				}
				svc, ok := localstackServiceOf[prefix]
				require.True(t, ok, "role %s may call %s: say which LocalStack service serves it", role, a)
				need[svc] = a
			}
		}
	}
	for s := range connectorCAOnly {
		delete(need, s)
	}
	for _, s := range transportTestServices {
		if _, ok := need[s]; !ok {
			need[s] = "the connector transport tests"
		}
	}
	var want []string
	for s := range need {
		want = append(want, s)
	}
	sort.Strings(want)
	got := strings.Split(string(listed[1]), ",")
	assert.Equal(t, want, got, "LOCALSTACK_SERVICES must be exactly what the template uses (why each: %v)", need)
	assert.True(t, sort.StringsAreSorted(got), "LOCALSTACK_SERVICES is sorted")
}

// TestLocalStackFence runs localstack/fenced.sh: anything but a loopback
// URL is refused before any command runs, and the command gets LocalStack's
// test keys with every profile and session of the caller's environment
// removed.
func TestLocalStackFence(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatalf("sh is required: %v", err)
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	script := filepath.Join(root, "localstack", "fenced.sh")
	run := func(url string, extra ...string) (string, error) {
		cmd := exec.Command("sh", script, "env") //nolint:gosec,noctx // G204: the repository's own script
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "LOCALSTACK_URL=" + url, "LOCALSTACK_FENCE_SKIP_HEALTH=1",
			"AWS_PROFILE=prod", "AWS_ACCESS_KEY_ID=AKIAREALKEY", "AWS_SECRET_ACCESS_KEY=real", "AWS_SESSION_TOKEN=real-session",
			"AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.2/creds"}, extra...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, bad := range []string{"https://sqs.us-east-1.amazonaws.com", "http://127.0.0.1.nip.io:4566", "http://10.1.2.3:4566",
		"http://localhost:4566/path", "http://user@localhost:4566", "localhost:4566", "ftp://localhost:4566"} {
		out, err := run(bad)
		require.Error(t, err, "%s must be refused:\n%s", bad, out)
		assert.NotContains(t, out, "AWS_ACCESS_KEY_ID=", "%s: the command must not run", bad)
	}
	for _, ok := range []string{"http://localhost:4566", "http://127.0.0.1:4566/", "https://[::1]:4566"} {
		out, err := run(ok)
		require.NoError(t, err, "%s:\n%s", ok, out)
		env := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if k, v, found := strings.Cut(line, "="); found {
				env[k] = v
			}
		}
		assert.Equal(t, "test", env["AWS_ACCESS_KEY_ID"], ok)
		assert.Equal(t, "test", env["AWS_SECRET_ACCESS_KEY"], ok)
		assert.Equal(t, strings.TrimSuffix(ok, "/"), env["AWS_ENDPOINT_URL"], ok)
		assert.Equal(t, "/dev/null", env["AWS_CONFIG_FILE"], ok)
		assert.Equal(t, "/dev/null", env["AWS_SHARED_CREDENTIALS_FILE"], ok)
		for _, gone := range []string{"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
			_, present := env[gone]
			assert.False(t, present, "%s: %s must be cleared", ok, gone)
		}
	}
}

// lambdaArchOfELF is Lambda's name for an ELF binary's machine.
var lambdaArchOfELF = map[elf.Machine]string{elf.EM_X86_64: "x86_64", elf.EM_AARCH64: "arm64"}

// TestFunctionsRunTheirDeclaredArchitecture: the lane's stack is
// synthesized as make localstack-deploy synthesizes it, with
// maasflow:architecture set to the host's; every function's bootstrap in
// the cloud assembly is a Linux executable of the instruction set its
// Architectures declares, which is the host's.
func TestFunctionsRunTheirDeclaredArchitecture(t *testing.T) {
	tpl := freshTemplate(t)
	host := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[runtime.GOARCH]
	require.NotEmpty(t, host, "Lambda runs amd64 and arm64 only, not %s", runtime.GOARCH)
	ids := tpl.ofType("AWS::Lambda::Function")
	require.NotEmpty(t, ids)
	for _, id := range ids {
		p := tpl.Resources[id].Properties
		assert.Equal(t, []any{host}, p["Architectures"], "%s declares the host's architecture", id)
		key, _ := p["Code"].(map[string]any)["S3Key"].(string)
		bin, ok := assetBinary(strings.TrimSuffix(key, ".zip"))
		require.True(t, ok, "%s: no bootstrap for asset %s", id, key)
		f, err := elf.Open(bin)
		require.NoError(t, err, "%s: the bootstrap is an ELF executable", id)
		assert.Equal(t, host, lambdaArchOfELF[f.Machine], "%s: the bootstrap's machine %s", id, f.Machine)
		assert.Equal(t, elf.ET_EXEC, f.Type, "%s: a static executable (CGO_ENABLED=0)", id)
		_ = f.Close()
	}
}
