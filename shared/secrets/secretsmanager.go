package secrets

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// SecretsManagerAPI is the part of the Secrets Manager client SecretsManager
// calls.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
	CreateSecret(ctx context.Context, in *secretsmanager.CreateSecretInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.CreateSecretOutput, error)
}

// SecretsManager keeps secrets in AWS Secrets Manager, one secret per name.
type SecretsManager struct {
	client   SecretsManagerAPI
	kmsKeyID string
}

var (
	_ Putter = (*SecretsManager)(nil)
	_ Getter = (*SecretsManager)(nil)
)

// Option configures a SecretsManager.
type Option func(*SecretsManager)

// WithKMSKeyID encrypts secrets this store creates with a customer-managed
// KMS key instead of the account's default aws/secretsmanager key.
func WithKMSKeyID(id string) Option { return func(s *SecretsManager) { s.kmsKeyID = id } }

// NewSecretsManager returns a SecretsManager over client.
func NewSecretsManager(client SecretsManagerAPI, opts ...Option) *SecretsManager {
	s := &SecretsManager{client: client}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Put stores value as a new version of the secret name, creating the secret
// on first use. Valid UTF-8 goes in SecretString (what the console and
// rotation tooling read), anything else in SecretBinary. Repeating a Put adds
// an identical version.
func (s *SecretsManager) Put(ctx context.Context, name string, value []byte) error {
	put := &secretsmanager.PutSecretValueInput{SecretId: aws.String(name)}
	create := &secretsmanager.CreateSecretInput{Name: aws.String(name)}
	if s.kmsKeyID != "" {
		create.KmsKeyId = aws.String(s.kmsKeyID)
	}
	if utf8.Valid(value) {
		put.SecretString = aws.String(string(value))
		create.SecretString = put.SecretString
	} else {
		put.SecretBinary = value
		create.SecretBinary = value
	}

	_, err := s.client.PutSecretValue(ctx, put)
	var missing *smtypes.ResourceNotFoundException
	if !errors.As(err, &missing) {
		if err != nil {
			return fmt.Errorf("put secret %s: %w", name, err)
		}
		return nil
	}
	_, err = s.client.CreateSecret(ctx, create)
	var exists *smtypes.ResourceExistsException
	if errors.As(err, &exists) {
		// Another writer created it between our two calls: write our
		// value as the newest version.
		_, err = s.client.PutSecretValue(ctx, put)
	}
	if err != nil {
		return fmt.Errorf("create secret %s: %w", name, err)
	}
	return nil
}

// Get returns the current value of the secret name, or *SecretNotFoundError.
func (s *SecretsManager) Get(ctx context.Context, name string) ([]byte, error) {
	out, err := s.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(name)})
	var missing *smtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &missing):
		return nil, &SecretNotFoundError{Name: name}
	case err != nil:
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	case out.SecretString != nil:
		return []byte(*out.SecretString), nil
	default:
		return out.SecretBinary, nil
	}
}
