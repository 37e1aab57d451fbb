// Package rolesanywhere gives a site connector short-lived AWS credentials
// from IAM Roles Anywhere: it calls CreateSession signed with the
// connector's certificate and private key (the AWS4-X509-ECDSA-SHA256
// variant of Signature Version 4, where the certificate stands for the
// access key and the private key signs the string to sign), so the
// connector holds no long-lived AWS key. docs/decisions.md, "Connector
// sites through the API, on Roles Anywhere sessions".
package rolesanywhere

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
)

// Algorithm is the signing algorithm of an ECDSA certificate.
const Algorithm = "AWS4-X509-ECDSA-SHA256"

// service is Roles Anywhere's name in the credential scope.
const service = "rolesanywhere"

// DefaultSessionSeconds is the session the connector asks for: the
// profile's own limit in the stack.
const DefaultSessionSeconds = 3600

// Provider is an aws.CredentialsProvider over CreateSession. It reads the
// certificate and key files at every call, so a renewed certificate is
// used from the next session on. Wrap it in aws.NewCredentialsCache, whose
// expiry window renews the credentials before they expire.
type Provider struct {
	CertFile, KeyFile                   string
	TrustAnchorARN, ProfileARN, RoleARN string
	// Endpoint overrides https://rolesanywhere.<region>.amazonaws.com
	// (tests).
	Endpoint string
	HTTP     *http.Client
	Duration int // seconds; DefaultSessionSeconds when 0
	Now      func() time.Time
}

// Identity is a connector's certificate and key.
type Identity struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// LoadIdentity reads a PEM certificate and a PEM EC private key (SEC 1 or
// PKCS #8). Its errors never quote the key.
func LoadIdentity(certFile, keyFile string) (Identity, error) {
	certPEM, err := os.ReadFile(certFile) //nolint:gosec // G304: the operator names the file
	if err != nil {
		return Identity{}, fmt.Errorf("certificate: %w", err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return Identity{}, fmt.Errorf("certificate %s: is not a PEM CERTIFICATE", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return Identity{}, fmt.Errorf("certificate %s: does not parse as X.509", certFile)
	}
	keyPEM, err := os.ReadFile(keyFile) //nolint:gosec // G304: the operator names the file
	if err != nil {
		return Identity{}, fmt.Errorf("private key: %w", err)
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return Identity{}, fmt.Errorf("private key %s: %w", keyFile, err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return Identity{}, fmt.Errorf("private key %s: is not the key of certificate %s", keyFile, certFile)
	}
	return Identity{Cert: cert, Key: key}, nil
}

// ParseKey parses a PEM EC private key.
func ParseKey(keyPEM []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("is not PEM")
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("is not an EC private key")
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("is not an EC private key")
	}
	return ec, nil
}

// createSessionRequest is CreateSession's body.
type createSessionRequest struct {
	DurationSeconds int    `json:"durationSeconds"`
	ProfileArn      string `json:"profileArn"`
	RoleArn         string `json:"roleArn"`
	TrustAnchorArn  string `json:"trustAnchorArn"`
}

type createSessionResponse struct {
	CredentialSet []struct {
		Credentials struct {
			AccessKeyID     string    `json:"accessKeyId"`
			SecretAccessKey string    `json:"secretAccessKey"`
			SessionToken    string    `json:"sessionToken"`
			Expiration      time.Time `json:"expiration"`
		} `json:"credentials"`
	} `json:"credentialSet"`
}

// Retrieve calls CreateSession and returns its credentials.
func (p *Provider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	id, err := LoadIdentity(p.CertFile, p.KeyFile)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("roles anywhere: %w", err)
	}
	anchor, err := arn.Parse(p.TrustAnchorARN)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("roles anywhere: trust anchor ARN: %w", err)
	}
	endpoint := p.Endpoint
	if endpoint == "" {
		endpoint = "https://rolesanywhere." + anchor.Region + ".amazonaws.com"
	}
	duration := p.Duration
	if duration == 0 {
		duration = DefaultSessionSeconds
	}
	body, err := json.Marshal(createSessionRequest{DurationSeconds: duration, ProfileArn: p.ProfileARN, RoleArn: p.RoleARN, TrustAnchorArn: p.TrustAnchorARN})
	if err != nil {
		return aws.Credentials{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(endpoint, "/")+"/sessions", bytes.NewReader(body))
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("roles anywhere: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	if err := Sign(req, body, id, anchor.Region, now().UTC()); err != nil {
		return aws.Credentials{}, err
	}
	hc := p.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("roles anywhere: CreateSession: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("roles anywhere: CreateSession: %w", err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		// The error body names the reason (an unknown trust anchor, an
		// expired certificate); it holds no credential.
		return aws.Credentials{}, fmt.Errorf("roles anywhere: CreateSession answered %d: %s", resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	var out createSessionResponse
	if err := json.Unmarshal(raw, &out); err != nil || len(out.CredentialSet) == 0 {
		return aws.Credentials{}, errors.New("roles anywhere: CreateSession answered no credentials")
	}
	c := out.CredentialSet[0].Credentials
	if c.AccessKeyID == "" || c.SecretAccessKey == "" || c.SessionToken == "" {
		return aws.Credentials{}, errors.New("roles anywhere: CreateSession answered incomplete credentials")
	}
	return aws.Credentials{
		AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken,
		Source: "RolesAnywhere", CanExpire: true, Expires: c.Expiration,
	}, nil
}

// Sign adds the X.509 Signature Version 4 headers to req, whose body is
// body: X-Amz-Date, X-Amz-X509 (the certificate, base64 DER) and an
// Authorization whose credential is the certificate's serial number
// (decimal) and whose signature is the key's ECDSA signature (DER, hex) of
// the SHA-256 of the string to sign.
func Sign(req *http.Request, body []byte, id Identity, region string, now time.Time) error {
	amzDate := now.Format("20060102T150405Z")
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-X509", base64.StdEncoding.EncodeToString(id.Cert.Raw))
	canonical, signed := CanonicalRequest(req, body)
	scope := now.Format("20060102") + "/" + region + "/" + service + "/aws4_request"
	digest := sha256.Sum256([]byte(StringToSign(amzDate, scope, canonical)))
	sig, err := ecdsa.SignASN1(rand.Reader, id.Key, digest[:])
	if err != nil {
		return fmt.Errorf("roles anywhere: sign: %w", err)
	}
	req.Header.Set("Authorization", Algorithm+" Credential="+id.Cert.SerialNumber.String()+"/"+scope+
		", SignedHeaders="+signed+", Signature="+hex.EncodeToString(sig))
	return nil
}

// signedHeaders are the headers CreateSession's signature covers.
var signedHeaders = []string{"content-type", "host", "x-amz-date", "x-amz-x509"}

// CanonicalRequest is Signature Version 4's canonical request of req (no
// query string) and its signed header list.
func CanonicalRequest(req *http.Request, body []byte) (canonical, signed string) {
	var b strings.Builder
	b.WriteString(req.Method + "\n")
	path := req.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(path + "\n")
	b.WriteString(req.URL.RawQuery + "\n")
	for _, h := range signedHeaders {
		v := req.Header.Get(h)
		if h == "host" {
			v = req.Host
			if v == "" {
				v = req.URL.Host
			}
		}
		b.WriteString(h + ":" + strings.TrimSpace(v) + "\n")
	}
	signed = strings.Join(signedHeaders, ";")
	sum := sha256.Sum256(body)
	b.WriteString("\n" + signed + "\n" + hex.EncodeToString(sum[:]))
	return b.String(), signed
}

// StringToSign is the string the key signs.
func StringToSign(amzDate, scope, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return Algorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
}
