// Command reset-machine is the ResetMachine activity as a Lambda function.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/maasflow/maasflow/functions/internal/awsenv"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/config"
)

func main() {
	deps, err := awsenv.Activities(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, config.Describe(err))
		os.Exit(1)
	}
	lambda.StartHandlerFunc(onboarding.New(deps).ResetMachine, config.HandlerOptions()...)
}
