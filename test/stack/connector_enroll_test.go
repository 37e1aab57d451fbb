package stack

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
)

// TestConnectorEnrollmentOnTheSynthesizedStack enrolls a connector
// through the deployed api: a site created on the connector path gets its
// queues (the api's SQS grants), the connector's CSR comes back signed by
// the connector CA's KMS key (kms:Sign) with the site as its subject CN,
// and a Roles Anywhere session tagged from that certificate may use the
// queue and table the answer names, and not another site's.
func TestConnectorEnrollmentOnTheSynthesizedStack(t *testing.T) {
	l := runLane(t, freshTemplate(t))
	site := l.admin("POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "lane-connector-site", "maas_url": "http://localhost:5240/MAAS", "connectivity": "connector",
	}, http.StatusCreated)
	id := site["id"].(string)
	l.aws.mu.Lock()
	_, queue := l.aws.queues["maasflow-dev-connector-"+id]
	_, dlq := l.aws.queues["maasflow-dev-connector-"+id+"-dlq"]
	alarm := l.aws.alarms["maasflow-dev-connector-"+id+"-dlq"]
	l.aws.mu.Unlock()
	require.True(t, queue && dlq, "the api made the site's request queue and DLQ")
	require.True(t, alarm, "the api gave the DLQ its alarm (the api's CloudWatch grants)")

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "another-site"}}, key)
	require.NoError(t, err)
	csr := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	out := l.admin("POST", "/api/v1/admin/maas-sites/"+id+"/connector/certificate", map[string]any{"csr": csr}, http.StatusCreated)

	block, _ := pem.Decode([]byte(out["certificate_pem"].(string)))
	require.NotNil(t, block, "a PEM certificate")
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	caBlock, _ := pem.Decode([]byte(out["ca_pem"].(string)))
	require.NotNil(t, caBlock)
	ca, err := x509.ParseCertificate(caBlock.Bytes)
	require.NoError(t, err)
	require.NoError(t, cert.CheckSignatureFrom(ca), "signed by the connector CA")
	assert.True(t, ca.PublicKey.(*ecdsa.PublicKey).Equal(&connectorCAKey.PublicKey), "the CA is the stack's connector CA")
	assert.Equal(t, id, cert.Subject.CommonName, "the CN is the site, whatever the CSR asked")
	assert.True(t, cert.PublicKey.(*ecdsa.PublicKey).Equal(&key.PublicKey), "the connector's own key")
	assert.True(t, l.called("maasflow-dev-api", "kms:Sign", connectorCAKeyARN), "the api signed with the KMS key")

	role := l.iam.roleByARN(out["role_arn"].(string))
	require.True(t, strings.HasPrefix(role, "ConnectorRole"), "the answer names the template's connector role, not %v", out["role_arn"])
	sts, err := roleStatements(l.res, role)
	require.NoError(t, err)
	// Roles Anywhere tags the session with the certificate's subject.
	s := &connectorSession{pr: principal{name: "connector " + id, role: role,
		tags: map[string]string{sessionTagSite: cert.Subject.CommonName}}, sts: sts}
	ctx := context.Background()
	queueURL, table := out["queue_url"].(string), out["table"].(string)
	link := sqsrelay.NewLink(sessionSQS{s}, sessionDynamo{s}, queueURL, table, id)
	ds, err := link.Receive(ctx)
	require.NoError(t, err, "its own queue %s", queueURL)
	require.NoError(t, ds[0].Ack(ctx))
	require.NoError(t, link.Reply(ctx, connector.Response{ID: "req-1", Status: 200}), "its own key in %s", table)
	other := sqsrelay.NewLink(sessionSQS{s}, sessionDynamo{s}, strings.TrimSuffix(queueURL, id)+"site-b", table, "site-b")
	_, err = other.Receive(ctx)
	require.ErrorIs(t, err, errAccessDenied)
	require.ErrorIs(t, other.Reply(ctx, connector.Response{ID: "req-1", Status: 200}), errAccessDenied)

	// Disabling the site deletes the queues the api made.
	l.admin("PATCH", "/api/v1/admin/maas-sites/"+id, map[string]any{"status": "disabled"}, http.StatusOK)
	l.aws.mu.Lock()
	_, queue = l.aws.queues["maasflow-dev-connector-"+id]
	alarm = l.aws.alarms["maasflow-dev-connector-"+id+"-dlq"]
	l.aws.mu.Unlock()
	assert.False(t, queue, "the disabled site's queue is gone")
	assert.False(t, alarm, "the disabled site's DLQ alarm is gone")
	l.requireClean()
}
