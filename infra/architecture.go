package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// ctxArchitecture is the instruction set every function is deployed for:
// arm64 (the default, what make build compiles) or x86_64. The LocalStack
// profile sets it to the Docker host's, whose Lambda containers run the
// bootstraps natively: an x86-64 host without QEMU cannot start arm64 ones.
const ctxArchitecture = "maasflow:architecture"

// lambdaArchitectures maps the context's values, and Go's GOARCH names of
// the same instruction sets, to Lambda's.
var lambdaArchitectures = map[string]func() awslambda.Architecture{
	"arm64":  awslambda.Architecture_ARM_64,
	"x86_64": awslambda.Architecture_X86_64,
	"amd64":  awslambda.Architecture_X86_64,
}

// badArchitectureID names the construct carrying an unknown
// architecture's synthesis error.
const badArchitectureID = "InvalidArchitectureContext"

// lambdaArchitecture is the functions' architecture from the context. An
// unknown value fails synthesis (once, however many functions ask).
func (b *builder) lambdaArchitecture() awslambda.Architecture {
	v := b.stack.Node().TryGetContext(jsii.String(ctxArchitecture))
	if v == nil || v == "" {
		return awslambda.Architecture_ARM_64()
	}
	s, _ := v.(string)
	if arch, ok := lambdaArchitectures[s]; ok {
		return arch()
	}
	if b.stack.Node().TryFindChild(jsii.String(badArchitectureID)) == nil {
		marker := constructs.NewConstruct(b.stack, jsii.String(badArchitectureID))
		marker.Node().AddValidation(&invalidProps{err: fmt.Errorf("context %s must be arm64 or x86_64 (amd64), got %v", ctxArchitecture, v)})
	}
	return awslambda.Architecture_ARM_64()
}
