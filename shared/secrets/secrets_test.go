package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// store is what both implementations offer.
type store interface {
	Putter
	Getter
}

// implementations runs a test against every Put/Get implementation.
func implementations(t *testing.T) map[string]func(t *testing.T) store {
	t.Helper()
	return map[string]func(t *testing.T) store{
		"file": func(t *testing.T) store {
			t.Helper()
			return NewFileStore(filepath.Join(t.TempDir(), "sub", "secrets.json"))
		},
		"secretsmanager": func(t *testing.T) store {
			t.Helper()
			return NewSecretsManager(newFakeSM())
		},
	}
}

func TestPutGet(t *testing.T) {
	for name, mk := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := mk(t)

			_, err := s.Get(ctx, "a")
			var nf *SecretNotFoundError
			require.ErrorAs(t, err, &nf)
			assert.Equal(t, "a", nf.Name)

			require.NoError(t, s.Put(ctx, "a", []byte("one")))
			require.NoError(t, s.Put(ctx, "b", []byte{0xff, 0x00, 0x01}))
			require.NoError(t, s.Put(ctx, "a", []byte("two")))

			got, err := s.Get(ctx, "a")
			require.NoError(t, err)
			assert.Equal(t, []byte("two"), got)
			got, err = s.Get(ctx, "b")
			require.NoError(t, err)
			assert.Equal(t, []byte{0xff, 0x00, 0x01}, got)
		})
	}
}

func TestSiteCredentialsRoundTrip(t *testing.T) {
	for name, mk := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := mk(t)
			in := domain.SiteCredentials{MAASAPIKey: "ck:tk:sec", BMCUsername: "admin", BMCPassword: "hunter2"}

			_, err := GetSiteCredentials(ctx, s, "site-1")
			var nf *SecretNotFoundError
			require.ErrorAs(t, err, &nf)
			assert.Equal(t, domain.SiteCredentialsSecretName("site-1"), nf.Name)

			require.NoError(t, PutSiteCredentials(ctx, s, "site-1", in))
			raw, err := s.Get(ctx, domain.SiteCredentialsSecretName("site-1"))
			require.NoError(t, err)
			assert.JSONEq(t, `{"maas_api_key":"ck:tk:sec","bmc_username":"admin","bmc_password":"hunter2"}`, string(raw),
				"the stored form holds the revealed values, not [redacted]")

			out, err := GetSiteCredentials(ctx, s, "site-1")
			require.NoError(t, err)
			assert.Equal(t, in, out)
		})
	}
}

func TestGetSiteCredentialsBadValueDoesNotLeak(t *testing.T) {
	s := NewFileStore(filepath.Join(t.TempDir(), "s.json"))
	ctx := context.Background()
	require.NoError(t, s.Put(ctx, domain.SiteCredentialsSecretName("x"), []byte(`{"maas_api_key": hunter2`)))
	_, err := GetSiteCredentials(ctx, s, "x")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
}

func TestFileStoreModeAndAtomicity(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secrets.json")
	require.NoError(t, os.WriteFile(path, []byte(`{}`), 0o644)) //nolint:gosec // G306: starts too open to check that Put tightens it
	s := NewFileStore(path)
	require.NoError(t, s.Put(context.Background(), "k", []byte("v")))

	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")

	// A second store over the same file (a restart) sees the value.
	got, err := NewFileStore(path).Get(context.Background(), "k")
	require.NoError(t, err)
	assert.Equal(t, []byte("v"), got)
}

func TestFileStoreCorruptFileDoesNotLeak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"k": "hunter2`), 0o600))
	_, err := NewFileStore(path).Get(context.Background(), "k")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
}

func TestFileStoreConcurrentPuts(t *testing.T) {
	s := NewFileStore(filepath.Join(t.TempDir(), "secrets.json"))
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range byte(20) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, s.Put(ctx, fmt.Sprintf("k%d", i), []byte{byte(i)}))
		}()
	}
	wg.Wait()
	for i := range byte(20) {
		got, err := s.Get(ctx, fmt.Sprintf("k%d", i))
		require.NoError(t, err)
		assert.Equal(t, []byte{byte(i)}, got)
	}
}

func TestSecretsManagerCalls(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		prepare  func(f *fakeSM)
		value    []byte
		wantErr  bool
		wantCall []string
	}{
		{name: "new secret is created", value: []byte("v"), wantCall: []string{"put", "create"}},
		{
			name:     "existing secret gets a version",
			prepare:  func(f *fakeSM) { f.values["n"] = []byte("old") },
			value:    []byte("v"),
			wantCall: []string{"put"},
		},
		{
			name:     "create race falls back to put",
			prepare:  func(f *fakeSM) { f.raceCreate = true },
			value:    []byte("v"),
			wantCall: []string{"put", "create", "put"},
		},
		{
			name:     "other errors are returned",
			prepare:  func(f *fakeSM) { f.putErr = errors.New("throttled") },
			value:    []byte("v"),
			wantErr:  true,
			wantCall: []string{"put"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSM()
			if tc.prepare != nil {
				tc.prepare(f)
			}
			err := NewSecretsManager(f, WithKMSKeyID("key-1")).Put(ctx, "n", tc.value)
			assert.Equal(t, tc.wantCall, f.calls)
			if tc.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "put secret n")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.value, f.values["n"])
			if f.created != nil {
				assert.Equal(t, "key-1", aws.ToString(f.created.KmsKeyId))
			}
		})
	}
}

// fakeSM is an in-memory Secrets Manager.
type fakeSM struct {
	mu         sync.Mutex
	values     map[string][]byte
	calls      []string
	created    *secretsmanager.CreateSecretInput
	putErr     error
	raceCreate bool
}

func newFakeSM() *fakeSM { return &fakeSM{values: map[string][]byte{}} }

func value(s *string, b []byte) []byte {
	if s != nil {
		return []byte(*s)
	}
	return b
}

func (f *fakeSM) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.values[aws.ToString(in.SecretId)]
	if !ok {
		return nil, &smtypes.ResourceNotFoundException{Message: aws.String("no such secret")}
	}
	out := &secretsmanager.GetSecretValueOutput{}
	if utf8.Valid(v) {
		out.SecretString = aws.String(string(v))
	} else {
		out.SecretBinary = v
	}
	return out, nil
}

func (f *fakeSM) PutSecretValue(_ context.Context, in *secretsmanager.PutSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "put")
	if f.putErr != nil {
		return nil, f.putErr
	}
	name := aws.ToString(in.SecretId)
	if _, ok := f.values[name]; !ok {
		return nil, &smtypes.ResourceNotFoundException{Message: aws.String("no such secret")}
	}
	f.values[name] = value(in.SecretString, in.SecretBinary)
	return &secretsmanager.PutSecretValueOutput{}, nil
}

func (f *fakeSM) CreateSecret(_ context.Context, in *secretsmanager.CreateSecretInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.CreateSecretOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "create")
	f.created = in
	name := aws.ToString(in.Name)
	if f.raceCreate {
		f.values[name] = []byte("someone else's")
		return nil, &smtypes.ResourceExistsException{Message: aws.String("exists")}
	}
	f.values[name] = value(in.SecretString, in.SecretBinary)
	return &secretsmanager.CreateSecretOutput{}, nil
}

func TestFileStoreCheckCatchesADamagedFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "secrets.json")
	f := NewFileStore(path)
	require.NoError(t, f.Check(ctx), "no file yet is fine")
	require.NoError(t, f.Put(ctx, "maasflow/sites/s1", []byte(`{"maas_api_key":"a:b:c-XYZZY"}`)))
	require.NoError(t, f.Check(ctx))

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b[:len(b)/2], 0o600)) // cut short
	err = f.Check(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "move it aside")
	assert.NotContains(t, err.Error(), "XYZZY", "the content is never quoted")
}
