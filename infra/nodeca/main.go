// Command nodeca has the node CA's KMS key self-sign the node CA
// certificate, once per deployment, and prints it (PEM): the file given to
// the stack as maasflow:nodeCaCertFile, which becomes the mutual TLS trust
// store and the ca_pem nodes receive (docs/deploy.md "Node identity on
// AWS"). The key never leaves KMS: it signs the certificate's digest.
//
//	go run ./infra/nodeca -key arn:aws:kms:…:key/… > node-ca.pem
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/maasflow/maasflow/shared/nodeid"
)

// caName is the node CA's subject, as the API names a CA it self-signs.
const caName = "maasflow node CA"

func main() {
	ctx := context.Background()
	err := run(ctx, os.Args[1:], os.Stdout, func() (nodeid.KMSAPI, error) {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, err
		}
		return kms.NewFromConfig(cfg), nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodeca:", err)
		os.Exit(1)
	}
}

// run parses args, signs and writes the certificate to out.
func run(ctx context.Context, args []string, out io.Writer, client func() (nodeid.KMSAPI, error)) error {
	fs := flag.NewFlagSet("nodeca", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	key := fs.String("key", "", "ARN or id of the node CA's KMS key (ECC_NIST_P256, SIGN_VERIFY)")
	name := fs.String("name", caName, `the CA's subject common name ("maasflow connector CA" for the connector CA's key)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *key == "" {
		return errors.New("-key is required: the ARN of the node CA's KMS key")
	}
	api, err := client()
	if err != nil {
		return fmt.Errorf("AWS configuration: %w", err)
	}
	signer, err := nodeid.NewKMSSigner(ctx, api, *key)
	if err != nil {
		return err
	}
	certPEM, err := nodeid.SelfSign(signer, *name, time.Now().UTC())
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, certPEM)
	return err
}
