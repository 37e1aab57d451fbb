package secrets_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/secrets"
)

// siteClient answers only its own site's secret, as the tagged session's
// policy does.
type siteClient struct {
	secrets.SecretsManagerAPI
	site  string
	names *[]string
}

func (c siteClient) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	*c.names = append(*c.names, c.site+"="+aws.ToString(in.SecretId))
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(`{"maas_api_key":"a:b:c"}`)}, nil
}

func TestSiteScopedUsesOneSessionPerSite(t *testing.T) {
	var names []string
	sessions := 0
	s := secrets.NewSiteScopedWith(func(site string) secrets.SecretsManagerAPI {
		sessions++
		return siteClient{site: site, names: &names}
	}, "prod/")
	ctx := context.Background()
	for _, site := range []string{"s1", "s2", "s1"} {
		c, err := secrets.GetSiteCredentials(ctx, s, site)
		require.NoError(t, err)
		assert.Equal(t, "a:b:c", c.MAASAPIKey.Reveal())
	}
	assert.Equal(t, []string{
		"s1=prod/" + domain.SiteCredentialsSecretName("s1"),
		"s2=prod/" + domain.SiteCredentialsSecretName("s2"),
		"s1=prod/" + domain.SiteCredentialsSecretName("s1"),
	}, names, "each site's secret through that site's session")
	assert.Equal(t, 2, sessions, "sessions are reused per site")

	_, err := s.Get(ctx, "maasflow/other")
	require.ErrorContains(t, err, "only site credentials")
	assert.Len(t, names, 3, "nothing sent for a name that is not a site's")
}

func TestSiteOfSecret(t *testing.T) {
	site, ok := secrets.SiteOfSecret(domain.SiteCredentialsSecretName("abc-1"))
	assert.True(t, ok)
	assert.Equal(t, "abc-1", site)
	for _, bad := range []string{"maasflow/sites//credentials", "maasflow/sites/a/b/credentials", "x/sites/a/credentials", "maasflow/sites/a"} {
		_, ok := secrets.SiteOfSecret(bad)
		assert.False(t, ok, bad)
	}
}

func TestPrefixedAndSplit(t *testing.T) {
	dir := t.TempDir()
	file := secrets.NewFileStore(dir + "/s.json")
	p := secrets.Prefixed{Prefix: "dev/", Store: file}
	ctx := context.Background()
	require.NoError(t, p.Put(ctx, "n", []byte("v")))
	got, err := file.Get(ctx, "dev/n")
	require.NoError(t, err)
	assert.Equal(t, "v", string(got))
	split := secrets.Split{Getter: p, Putter: p}
	got, err = split.Get(ctx, "n")
	require.NoError(t, err)
	assert.Equal(t, "v", string(got))
	_, err = secrets.Split{}.Get(ctx, "n")
	require.Error(t, err)
}
