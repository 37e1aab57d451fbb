// Command reconcile is every state of the reconcile state machine
// (statemachines/reconcile.asl.json) as one Lambda function: begin a run,
// check one site, finish the run.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/maasflow/maasflow/functions/internal/awsenv"
	"github.com/maasflow/maasflow/shared/config"
)

func main() {
	r, err := awsenv.Reconcile(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, config.Describe(err))
		os.Exit(1)
	}
	lambda.StartHandlerFunc(r.Step, config.HandlerOptions()...)
}
