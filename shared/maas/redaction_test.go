package maas

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

const (
	seededBMCPass  = "Zq8-bmc p@ss&SEEDED"
	seededUserData = "#cloud-config\nwrite_files:\n- path: /etc/maasflow/enroll\n  content: ENROLL-TOKEN-9f8e7d6c5b4a\n"
)

// echoMAAS answers every request with status and a body that repeats
// everything the client sent: the Authorization header, the raw body and
// each decoded form value (user_data also base64-decoded, as MAAS does).
// It is the worst MAAS could do with the secrets it was given.
func echoMAAS(t *testing.T, status int, asJSON bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(raw))
		values := []string{r.Header.Get("Authorization"), string(raw), r.URL.RawQuery}
		for _, vs := range form {
			values = append(values, vs...)
		}
		if ud := form.Get("user_data"); ud != "" {
			dec, _ := base64.StdEncoding.DecodeString(ud)
			values = append(values, string(dec))
		}
		if asJSON {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string][]string{"__all__": values, "power_parameters": values})
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, strings.Join(values, " | "))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// secretForms are the seeded secrets in every form they travel in.
func secretForms() []string {
	var out []string
	for _, s := range []string{testKey.Reveal(), testTokenSecret, seededBMCPass, seededUserData, "ENROLL-TOKEN-9f8e7d6c5b4a"} {
		b64 := base64.StdEncoding.EncodeToString([]byte(s))
		out = append(out, s, url.QueryEscape(s), b64, url.QueryEscape(b64))
	}
	return out
}

func TestNoSecretInErrorsOrLogs(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(*Client) error{
		"create": func(c *Client) error {
			_, err := c.Create(ctx, MachineCreateParams{
				Hostname: "gpu-node-017", Architecture: "amd64/generic", PowerAddress: "10.30.0.17",
				PowerUser: "maas", PowerPass: domain.Secret(seededBMCPass), Commission: true,
			})
			return err
		},
		"deploy": func(c *Client) error {
			_, err := c.Deploy(ctx, "k3tgaq", MachineDeployParams{UserData: domain.Secret(seededUserData), DistroSeries: "jammy"})
			return err
		},
		"get":   func(c *Client) error { _, err := c.Get(ctx, "k3tgaq"); return err },
		"probe": func(c *Client) error { _, err := c.Probe(ctx); return err },
		"find by power address": func(c *Client) error {
			_, err := c.FindByPowerAddress(ctx, "10.30.0.17")
			return err
		},
	}
	for _, status := range []int{400, 403, 404, 409, 500, 503} {
		for _, asJSON := range []bool{false, true} {
			srv := echoMAAS(t, status, asJSON)
			var logs bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			c, err := NewClient(srv.URL+"/MAAS", testKey, WithLogger(logger))
			require.NoError(t, err)
			for name, call := range calls {
				t.Run(fmt.Sprintf("%d json=%v %s", status, asJSON, name), func(t *testing.T) {
					err := call(c)
					require.Error(t, err)
					// The echo really did carry the secrets back: without
					// scrubbing this test would fail.
					assertNoSecret(t, err)
					logger.ErrorContext(ctx, "call failed", "err", err)
				})
			}
			assert.NotEmpty(t, logs.String())
			for _, s := range secretForms() {
				assert.NotContains(t, logs.String(), s)
			}
		}
	}
}

func TestEchoedSecretsAreReplaced(t *testing.T) {
	srv := echoMAAS(t, http.StatusBadRequest, false)
	c, err := NewClient(srv.URL+"/MAAS", testKey)
	require.NoError(t, err)

	_, err = c.Deploy(context.Background(), "k3tgaq", MachineDeployParams{UserData: domain.Secret(seededUserData)})
	var bad *MAASBadRequestError
	require.ErrorAs(t, err, &bad)
	// Something came back, and where the secrets were there is a marker.
	assert.Contains(t, bad.Message, redactedText)
	assert.Contains(t, bad.Message, "oauth_signature_method")
}

func TestNoSecretInTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/MAAS"
	srv.Close()
	c, err := NewClient(base, testKey)
	require.NoError(t, err)

	_, err = c.Create(context.Background(), MachineCreateParams{PowerAddress: "10.30.0.17", PowerPass: domain.Secret(seededBMCPass)})
	var tr *MAASTransportError
	require.ErrorAs(t, err, &tr)
	assertNoSecret(t, err)
}

func assertNoSecret(t *testing.T, err error) {
	t.Helper()
	js, jerr := json.Marshal(err)
	require.NoError(t, jerr)
	for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), string(js)} {
		for _, s := range secretForms() {
			assert.NotContains(t, text, s)
		}
	}
}

func TestScrubberVariants(t *testing.T) {
	sc := newScrubber("p@ss word&x")
	for _, in := range []string{
		"p@ss word&x",
		url.QueryEscape("p@ss word&x"),
		base64.StdEncoding.EncodeToString([]byte("p@ss word&x")),
		oauthEscape("p@ss word&x"),
	} {
		assert.Equal(t, "x="+redactedText+".", sc.scrub("x="+in+"."), in)
	}
	assert.Equal(t, "ab", newScrubber("ab").scrub("ab"), "too short to scrub usefully")
}

func TestMessageTruncation(t *testing.T) {
	long := strings.Repeat("é", maxMessageLen)
	msg := newScrubber().message("line1\nline2\t" + long)
	assert.True(t, strings.HasPrefix(msg, "line1 line2 é"))
	assert.LessOrEqual(t, len(msg), maxMessageLen+len("…"))
	assert.True(t, strings.HasSuffix(msg, "…"))
}
