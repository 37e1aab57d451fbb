package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	ststypes "github.com/aws/aws-sdk-go-v2/service/sts/types"
)

// siteSecretPrefix and siteSecretSuffix frame a site's credentials name
// (domain.SiteCredentialsSecretName).
const (
	siteSecretPrefix = "maasflow/sites/" //nolint:gosec // G101: a secret name prefix, not a credential
	siteSecretSuffix = "/credentials"
)

// SiteOfSecret returns the site whose credentials (or per-node power
// override) name is name, or false when name is neither.
func SiteOfSecret(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, siteSecretPrefix)
	if !ok {
		return "", false
	}
	site, ok := strings.CutSuffix(rest, siteSecretSuffix)
	if !ok {
		// A per-node power override: <site>/power/<key> (domain.PowerOverrideSecretName).
		var key string
		site, key, ok = strings.Cut(rest, "/power/")
		ok = ok && key != "" && !strings.Contains(key, "/")
	}
	if !ok || site == "" || strings.Contains(site, "/") {
		return "", false
	}
	return site, true
}

// Prefixed puts prefix before every name, so that the stages of one
// account keep separate secrets ("prod/maasflow/sites/…").
type Prefixed struct {
	Prefix string
	Store  interface {
		Getter
		Putter
	}
}

// Get reads prefix+name.
func (p Prefixed) Get(ctx context.Context, name string) ([]byte, error) {
	return p.Store.Get(ctx, p.Prefix+name)
}

// Put writes prefix+name.
func (p Prefixed) Put(ctx context.Context, name string, value []byte) error {
	return p.Store.Put(ctx, p.Prefix+name, value)
}

// SiteScoped reads a site's credentials with a session of a role assumed
// for that site alone: the session carries the tag SiteTagKey=<site>, and
// the role's policy allows only the secret named after the tagged site
// (infra, "site-secrets role"). A confused caller asking for another
// site's secret under the wrong session gets AccessDenied, and CloudTrail
// shows which site each read was for. Sessions are cached per site until
// their credentials expire.
type SiteScoped struct {
	newClient func(site string) SecretsManagerAPI
	prefix    string

	mu      sync.Mutex
	clients map[string]*SecretsManager
}

// NewSiteScoped returns a SiteScoped that assumes roleARN through cfg's
// credentials, tagging each session with tagKey=<site>, and reads
// prefix+name.
func NewSiteScoped(cfg aws.Config, roleARN, tagKey, prefix string) *SiteScoped {
	stsClient := sts.NewFromConfig(cfg)
	return &SiteScoped{
		prefix: prefix,
		newClient: func(site string) SecretsManagerAPI {
			provider := stscreds.NewAssumeRoleProvider(stsClient, roleARN, func(o *stscreds.AssumeRoleOptions) {
				o.RoleSessionName = sessionName(site)
				o.Tags = []ststypes.Tag{{Key: aws.String(tagKey), Value: aws.String(site)}}
			})
			scoped := cfg.Copy()
			scoped.Credentials = aws.NewCredentialsCache(provider)
			return secretsmanager.NewFromConfig(scoped)
		},
	}
}

// NewSiteScopedWith builds a SiteScoped over a client factory (tests).
func NewSiteScopedWith(newClient func(site string) SecretsManagerAPI, prefix string) *SiteScoped {
	return &SiteScoped{newClient: newClient, prefix: prefix}
}

var _ Getter = (*SiteScoped)(nil)

// Get reads a site's credentials; any other name is refused before a call.
func (s *SiteScoped) Get(ctx context.Context, name string) ([]byte, error) {
	site, ok := SiteOfSecret(name)
	if !ok {
		return nil, fmt.Errorf("secret %s: only site credentials are readable here", name)
	}
	return s.client(site).Get(ctx, s.prefix+name)
}

func (s *SiteScoped) client(site string) *SecretsManager {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clients == nil {
		s.clients = map[string]*SecretsManager{}
	}
	c, ok := s.clients[site]
	if !ok {
		c = NewSecretsManager(s.newClient(site))
		s.clients[site] = c
	}
	return c
}

// sessionName is a valid role session name for the site (at most 64
// characters of [\w+=,.@-]).
func sessionName(site string) string {
	var b strings.Builder
	b.WriteString("maasflow-")
	for _, r := range site {
		if b.Len() >= 64 {
			break
		}
		if r < 0x80 && (r == '-' || r == '_' || r == '.' || r == '@' || r == '=' || r == ',' || r == '+' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Split reads through one store and writes through another: the API
// writes site credentials with its own role and reads them through the
// site-scoped role.
type Split struct {
	Getter Getter
	Putter Putter
}

// Get reads through Getter.
func (s Split) Get(ctx context.Context, name string) ([]byte, error) {
	if s.Getter == nil {
		return nil, errors.New("secrets: no reader configured")
	}
	return s.Getter.Get(ctx, name)
}

// Put writes through Putter.
func (s Split) Put(ctx context.Context, name string, value []byte) error {
	if s.Putter == nil {
		return errors.New("secrets: no writer configured")
	}
	return s.Putter.Put(ctx, name, value)
}
