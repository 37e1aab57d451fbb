// Package deps pins the module graph while the tree is being assembled.
package deps

import (
	_ "github.com/aws/aws-lambda-go/events"
	_ "github.com/aws/aws-lambda-go/lambda"
	_ "github.com/aws/aws-lambda-go/lambdacontext"
	_ "github.com/aws/aws-sdk-go-v2/aws"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/credentials"
	_ "github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	_ "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	_ "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	_ "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	_ "github.com/aws/aws-sdk-go-v2/service/sfn"
	_ "github.com/canonical/gomaasclient/client"
	_ "github.com/canonical/gomaasclient/entity"
	_ "github.com/google/uuid"
	_ "github.com/jonboulle/clockwork"
	_ "github.com/ohler55/ojg/jp"
	_ "github.com/ohler55/ojg/oj"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/stretchr/testify/assert"
	_ "github.com/stretchr/testify/require"
	_ "github.com/truora/minidyn/aws-v2/client"
	_ "github.com/truora/minidyn/server"
)
