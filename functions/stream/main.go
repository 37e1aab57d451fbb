// Command stream serves the admin API's streams (GET …/stream, server-sent
// events) behind a Lambda function URL in RESPONSE_STREAM mode: API
// Gateway's HTTP API, in front of the api function, buffers a Lambda's
// whole answer and cannot carry them. The URL is public (auth type NONE,
// since a browser cannot sign requests with SigV4), so the function checks
// each operator's JWT itself, as the API's authorizer would (auth.go).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-lambda-go/lambdaurl"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/store"
)

// discoveryTimeout bounds the cold start's read of the issuer's discovery
// document.
const discoveryTimeout = 10 * time.Second

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, config.Describe(err))
		os.Exit(1)
	}
}

func run() error {
	var table, issuer, audiences, groupsClaim, adminGroup string
	if err := config.Load(nil,
		config.Var{Name: config.EnvTable, Default: store.DefaultTable, Target: &table},
		config.Var{Name: config.EnvJWTIssuer, Required: true, Target: &issuer},
		config.Var{Name: config.EnvJWTAudiences, Required: true, Target: &audiences},
		config.Var{Name: config.EnvAdminGroupsClaim, Target: &groupsClaim},
		config.Var{Name: config.EnvAdminGroup, Default: config.DefaultAdminGroup, Target: &adminGroup},
	); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
	defer cancel()
	auth, err := newJWTAuth(ctx, authSettings{Issuer: issuer, Audiences: splitList(audiences), GroupsClaim: groupsClaim, AdminGroup: adminGroup})
	if err != nil {
		return err
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS configuration: %w", err)
	}
	st := store.New(dynamodb.NewFromConfig(cfg), table, time.Now)
	lambdaurl.Start(newHandler(streamConfig(), st, auth, slog.New(lambdacontext.NewLogHandler())))
	return nil
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
