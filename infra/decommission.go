package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/config"
)

// Functions of the decommission paths with grants beyond the common set.
const (
	// functionStartReimage starts the reimage's onboarding execution.
	functionStartReimage = "start-reimage"
	// functionDrainAllocations calls the allocation service.
	functionDrainAllocations = "drain-allocations"
)

// secretNameRE is the character set and length Secrets Manager accepts
// for a secret name. It has no IAM wildcard (* or ?), so a grant built
// from the name matches that name only.
var secretNameRE = regexp.MustCompile(`^[A-Za-z0-9/_+=.@-]{1,512}$`)

// randomSuffixRE is the "-" and six characters Secrets Manager appends to
// a secret's ARN. A name already ending so is one AWS advises against: a
// partial ARN of it is ambiguous.
var randomSuffixRE = regexp.MustCompile(`-[A-Za-z0-9]{6}$`)

const outputDecommissionArn = "DecommissionStateMachineArn"

// loadDecommission reads the decommission ASL and resolves its
// placeholders, which may only name functions. A tree without the file
// (an onboarding-only fixture) builds no decommission state machine.
func loadDecommission(root string, src *Sources) error {
	asl, byFn, err := loadFunctionASL(root, decommissionASL, "the decommission state machine", src.Functions)
	if err != nil || asl == nil {
		return err
	}
	src.DecommissionASL, src.DecommissionPlaceholders = string(asl), byFn
	return nil
}

// loadFunctionASL reads the state machine at rel under root and resolves
// its placeholders, which may only name one of functions; what names the
// state machine in errors. A missing file is nil and no error: the tree
// builds no such state machine.
func loadFunctionASL(root, rel, what string, functions []string) (asl []byte, byFn map[string]string, err error) {
	path := filepath.Join(root, rel)
	asl, err = os.ReadFile(path) //nolint:gosec // G304: a file of this repository, under the root the app is given
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", what, err)
	}
	if _, err := StateNames(asl); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	byFn, other, err := ResolvePlaceholders(asl, functions)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(other) > 0 {
		return nil, nil, fmt.Errorf("%s: placeholders %v: %s integrates with functions only", path, other, what)
	}
	return asl, byFn, nil
}

func (p *MaasflowStackProps) validateDecommission() []error {
	errs := p.validateAllocationSecret()
	for _, ph := range slices.Sorted(maps.Keys(p.Sources.DecommissionPlaceholders)) {
		fn := p.Sources.DecommissionPlaceholders[ph]
		switch {
		case !slices.Contains(p.Sources.Functions, fn):
			errs = append(errs, fmt.Errorf("decommission placeholder ${%s} names function %s, which is not in functions/", ph, fn))
		case fn == functionAPI:
			errs = append(errs, fmt.Errorf("decommission placeholder ${%s}: the %s function cannot be a state machine task", ph, functionAPI))
		}
	}
	return errs
}

// validateAllocationSecret checks the allocation service's token secret:
// named exactly when the service is configured, a name Secrets Manager
// accepts, and under the stage's secret prefix like every other secret of
// the stack, so one stage never reads another's token. Site credentials
// have their own path under that prefix, which the site-scoped role reads
// and the api writes: the token may not live there.
func (p *MaasflowStackProps) validateAllocationSecret() []error {
	name := p.AllocationSecretName
	switch {
	case p.AllocationServiceURL == "" && name == "":
		return nil
	case p.AllocationServiceURL == "":
		return []error{fmt.Errorf("context %s is set but %s is not: set both, or neither to have every drain stop for an operator",
			ctxAllocationSecretName, ctxAllocationServiceURL)}
	case name == "":
		return []error{fmt.Errorf("context %s: the allocation service (%s) needs the name of the secret holding its bearer token",
			ctxAllocationSecretName, ctxAllocationServiceURL)}
	case !secretNameRE.MatchString(name):
		return []error{fmt.Errorf("context %s %q: a Secrets Manager name has 1-512 letters, digits and /_+=.@- only",
			ctxAllocationSecretName, name)}
	case randomSuffixRE.MatchString(name):
		return []error{fmt.Errorf("context %s %q: a name ending in a hyphen and six characters is ambiguous with the suffix Secrets Manager adds to its ARN",
			ctxAllocationSecretName, name)}
	}
	if p.Stage == "" {
		return nil // the missing stage is reported on its own
	}
	prefix := p.Stage + "/"
	switch {
	case !strings.HasPrefix(name, prefix) || len(name) == len(prefix):
		return []error{fmt.Errorf("context %s %q: the secret must be under the stage's secret prefix %q, as every secret of the stack is (e.g. %smaasflow/allocation-service/token)",
			ctxAllocationSecretName, name, prefix, prefix)}
	case strings.HasPrefix(name, prefix+siteSecretsPath):
		return []error{fmt.Errorf("context %s %q: %s%s holds the sites' credentials; put the allocation token elsewhere under %q",
			ctxAllocationSecretName, name, prefix, siteSecretsPath, prefix)}
	}
	return nil
}

func (b *builder) decommissionName() string { return b.name("decommission") }

// allocationSecretARN is the ARN of exactly the configured secret: its
// name and the "-" and six random characters Secrets Manager appends.
func (b *builder) allocationSecretARN() *string {
	return b.arn("secretsmanager", "secret", b.props.AllocationSecretName+"-??????")
}

// decommissionMachine builds the decommission state machine and the grants
// only its paths need: the state machine invokes exactly the functions it
// names; the api starts it; start-reimage starts onboardings; the api and
// drain-allocations reach the allocation service with the token secret.
func (b *builder) decommissionMachine() {
	src := b.props.Sources
	if src.DecommissionASL == "" {
		return
	}
	subs := map[string]*string{}
	invoked := map[string]bool{}
	for ph, fn := range src.DecommissionPlaceholders {
		subs[ph] = b.fns[fn].FunctionArn()
		invoked[fn] = true
	}
	// Named with part of the stack ID, as the onboarding's: a log group a
	// destroyed stack retained never blocks the next deploy.
	logs := awslogs.NewLogGroup(b.stack, jsii.String("DecommissionLogs"), &awslogs.LogGroupProps{
		LogGroupName: awscdk.Fn_Join(jsii.String(""), &[]*string{
			jsii.String("/aws/vendedlogs/states/" + b.decommissionName() + "-"), b.stackIDSuffix(),
		}),
		Retention: logRetention,
	})
	b.decom = awsstepfunctions.NewStateMachine(b.stack, jsii.String("Decommission"), &awsstepfunctions.StateMachineProps{
		StateMachineName:        jsii.String(b.decommissionName()),
		StateMachineType:        awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(src.DecommissionASL)),
		DefinitionSubstitutions: &subs,
		Logs: &awsstepfunctions.LogOptions{
			Destination:          logs,
			Level:                awsstepfunctions.LogLevel_ERROR,
			IncludeExecutionData: jsii.Bool(false),
		},
		TracingEnabled: jsii.Bool(true),
	})
	nagStateMachine(b.decom)
	for _, name := range src.Functions {
		if invoked[name] {
			b.fns[name].GrantInvoke(b.decom)
		}
	}

	api := b.fns[functionAPI]
	api.AddEnvironment(jsii.String(config.EnvDecommissionStateMachine), b.decom.StateMachineArn(), nil)
	api.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:StartExecution"),
		Resources: jsii.Strings(*b.decom.StateMachineArn()),
	}))
	// Stop and Describe are authorised on the executions, not the machine.
	api.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:StopExecution", "states:DescribeExecution"),
		Resources: jsii.Strings(*b.arn("states", "execution", b.decommissionName()+":*")),
	}))
	if fn, ok := b.fns[functionStartReimage]; ok {
		// The onboarding's ARN from its name: no reference, no cycle.
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("states:StartExecution"),
			Resources: jsii.Strings(*b.onboardingARN()),
		}))
	}
	if b.props.AllocationServiceURL != "" {
		for _, name := range []string{functionAPI, functionDrainAllocations} {
			fn, ok := b.fns[name]
			if !ok {
				continue
			}
			fn.AddEnvironment(jsii.String(config.EnvAllocationServiceURL), jsii.String(b.props.AllocationServiceURL), nil)
			fn.AddEnvironment(jsii.String(config.EnvAllocationTokenSecret), jsii.String(b.props.AllocationSecretName), nil)
			fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
				Resources: jsii.Strings(*b.allocationSecretARN()),
			}))
		}
	}
	awscdk.NewCfnOutput(b.stack, jsii.String(outputDecommissionArn), &awscdk.CfnOutputProps{
		Value: b.decom.StateMachineArn(), Description: jsii.String("Decommission state machine"),
	})
}
