package api

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/maasflow/maasflow/shared/clock"
)

// CertIdentity is the NodeIdentifier of node certificates: a request whose
// client certificate (peerChain) the node CA verifies at clk's now names
// the certificate's node; one without a certificate names none (the
// enrollment token is tried), and a refused certificate is an error.
func CertIdentity(ca NodeCA, clk clock.Clock) NodeIdentifier { return certIdentity{ca: ca, clk: clk} }

type certIdentity struct {
	ca  NodeCA
	clk clock.Clock
}

func (c certIdentity) NodeOf(r *http.Request) (string, bool, error) {
	chain := peerChain(r)
	if len(chain) == 0 {
		return "", false, nil
	}
	id, _, err := c.ca.Verify(chain, c.clk.Now().UTC())
	if err != nil {
		return "", false, err
	}
	return id, true, nil
}

// peerChain is the client certificate chain of a node endpoint's request:
// the TLS connection's locally; behind an API Gateway custom domain with
// mutual TLS, the certificate the gateway verified against the node CA
// trust store and passed in the request context (clientCert.clientCertPem),
// which a client cannot set itself. Nil when there is none.
func peerChain(r *http.Request) []*x509.Certificate {
	if r.TLS != nil {
		return r.TLS.PeerCertificates
	}
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || rc.Authentication.ClientCert.ClientCertPem == "" {
		return nil
	}
	rest := []byte(rc.Authentication.ClientCert.ClientCertPem)
	var chain []*x509.Certificate
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return chain
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil
		}
		chain = append(chain, c)
	}
}
