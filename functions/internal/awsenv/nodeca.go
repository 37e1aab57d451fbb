package awsenv

import (
	"context"
	"fmt"
	"time"

	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// nodeCA is the API's node CA over the KMS key the environment names
// (nil when it names none), and the node endpoints' URL.
func nodeCA(ctx context.Context, lookup func(string) (string, bool), kms func() nodeid.KMSAPI) (api.NodeCA, string, error) {
	keyID, _ := lookup(config.EnvNodeCAKeyID)
	if keyID == "" {
		return nil, "", nil
	}
	signer, err := nodeid.NewKMSSigner(ctx, kms(), keyID)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", config.EnvNodeCAKeyID, err)
	}
	certPEM, _ := lookup(config.EnvNodeCACert)
	if certPEM == "" {
		// The same key and name verify the same node certificates whatever
		// certificate of the CA a cold start makes.
		if certPEM, err = nodeid.SelfSign(signer, "maasflow node CA", time.Now().UTC()); err != nil {
			return nil, "", err
		}
	}
	ca, err := nodeid.NewCA(certPEM, signer)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", config.EnvNodeCACert, err)
	}
	url, _ := lookup(config.EnvNodeMTLSURL)
	return ca, url, nil
}
