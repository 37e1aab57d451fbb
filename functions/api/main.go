// Command api serves the admin REST API and the node enrollment endpoint
// behind an API Gateway HTTP API (payload format 2.0).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/maasflow/maasflow/functions/internal/awsenv"
	"github.com/maasflow/maasflow/shared/config"
)

func main() {
	handler, err := awsenv.API(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, config.Describe(err))
		os.Exit(1)
	}
	lambda.Start(httpadapter.NewV2(handler).ProxyWithContext)
}
