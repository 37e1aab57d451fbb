package lokipush_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/lokipush"
)

// lokiValue is one [timestamp, line, structured metadata] of Loki's JSON
// push format (https://grafana.com/docs/loki/latest/reference/loki-http-api/#ingest-logs).
type lokiValue struct {
	ns       int64
	line     string
	metadata map[string]string
}

func (v *lokiValue) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw) < 2 || len(raw) > 3 {
		return &json.UnsupportedValueError{Str: string(b)}
	}
	var ts string
	if err := json.Unmarshal(raw[0], &ts); err != nil {
		return err
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return err
	}
	v.ns = n
	if err := json.Unmarshal(raw[1], &v.line); err != nil {
		return err
	}
	if len(raw) == 3 {
		return json.Unmarshal(raw[2], &v.metadata)
	}
	return nil
}

type lokiPush struct {
	Streams []struct {
		Stream map[string]string `json:"stream"`
		Values []lokiValue       `json:"values"`
	} `json:"streams"`
}

// fakeLoki decodes every push it receives; answers lists the status of
// each answer in turn (then 204).
type fakeLoki struct {
	mu      sync.Mutex
	pushes  []lokiPush
	answers []int
	tenant  []string
	auth    []string
}

func (f *fakeLoki) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != lokipush.PushPath || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "not a push", http.StatusNotFound)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var p lokiPush
	if err := json.Unmarshal(b, &p); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tenant = append(f.tenant, r.Header.Get("X-Scope-OrgID"))
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	status := http.StatusNoContent
	if len(f.answers) > 0 {
		status, f.answers = f.answers[0], f.answers[1:]
	}
	if status == http.StatusNoContent {
		f.pushes = append(f.pushes, p)
	}
	w.WriteHeader(status)
}

func TestPushSendsLabelsMetadataAndLines(t *testing.T) {
	loki := &fakeLoki{answers: []int{http.StatusServiceUnavailable}} // the first try fails: retried
	srv := httptest.NewServer(loki)
	defer srv.Close()
	p, err := lokipush.New(lokipush.Config{URL: srv.URL, FlushInterval: time.Hour, TenantID: "ops"})
	require.NoError(t, err)
	log := slog.New(p.Handler(slog.LevelInfo))

	at := time.Date(2026, 3, 2, 10, 0, 0, 123, time.UTC)
	onb := log.With(logfield.SiteID, "site-1", logfield.CorrelationID, "cid-9")
	rec := slog.NewRecord(at, slog.LevelInfo, "stage entered", 0)
	rec.AddAttrs(slog.String(logfield.OnboardingID, "ob-1"), slog.String(logfield.NodeID, "n-1"), slog.String(logfield.MAASSystemID, "abc123"),
		slog.String(logfield.Hostname, "gpu-01"), slog.String(logfield.Stage, "deploy"))
	require.NoError(t, onb.Handler().Handle(t.Context(), rec))
	log.Warn("site probe failed", logfield.SiteID, "site-2")
	log.Debug("below the level")
	log.Error("no site")
	require.NoError(t, p.Close())

	require.Len(t, loki.pushes, 1, "one batch, delivered on the second try")
	assert.Equal(t, []string{"ops", "ops"}, loki.tenant)
	streams := map[string]map[string]string{}
	values := map[string][]lokiValue{}
	for _, s := range loki.pushes[0].Streams {
		key := s.Stream["level"] + "/" + s.Stream["site"]
		streams[key] = s.Stream
		values[key] = append(values[key], s.Values...)
	}
	assert.Equal(t, map[string]string{"service_name": "maasflow", "level": "info", "site": "site-1"}, streams["info/site-1"],
		"labels are only the low-cardinality ones")
	assert.Equal(t, map[string]string{"service_name": "maasflow", "level": "warn", "site": "site-2"}, streams["warn/site-2"])
	assert.Equal(t, map[string]string{"service_name": "maasflow", "level": "error"}, streams["error/"])
	assert.Len(t, streams, 3, "debug is below the level")

	v := values["info/site-1"]
	require.Len(t, v, 1)
	assert.Equal(t, at.UnixNano(), v[0].ns)
	assert.Equal(t, map[string]string{logfield.SiteID: "site-1", logfield.OnboardingID: "ob-1", logfield.NodeID: "n-1",
		logfield.MAASSystemID: "abc123", logfield.Hostname: "gpu-01", logfield.CorrelationID: "cid-9"}, v[0].metadata,
		"the six correlation fields ride as structured metadata")
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(v[0].line), &line), "the line is the log file's JSON")
	assert.Equal(t, "stage entered", line["msg"])
	assert.Equal(t, "deploy", line["stage"])
	assert.EqualValues(t, 3, p.Sent(), "three records sent (debug never queued)")
	assert.Zero(t, p.Dropped())
}

func TestPushDropsWhatLokiRefuses(t *testing.T) {
	loki := &fakeLoki{answers: []int{http.StatusBadRequest}}
	srv := httptest.NewServer(loki)
	defer srv.Close()
	p, err := lokipush.New(lokipush.Config{URL: srv.URL, FlushInterval: time.Hour})
	require.NoError(t, err)
	log := slog.New(p.Handler(slog.LevelInfo))
	log.Info("refused")
	require.NoError(t, p.Close())
	assert.Empty(t, loki.pushes)
	assert.Len(t, loki.tenant, 1, "a 400 is not sent again")
	assert.EqualValues(t, 1, p.Dropped())
	log.Info("after close")
	assert.EqualValues(t, 2, p.Dropped(), "nothing is queued after Close")
}

func TestNewRefusesABadURL(t *testing.T) {
	for _, u := range []string{"", "loki:3100", "ftp://loki", "http://"} {
		_, err := lokipush.New(lokipush.Config{URL: u})
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), "http or https base URL")
	}
}

// A hosted Loki takes a user and an API key as basic auth in its URL: they
// are sent as Authorization and never shown.
func TestURLCredentialsAreSentAndNeverShown(t *testing.T) {
	loki := &fakeLoki{}
	srv := httptest.NewServer(loki)
	defer srv.Close()
	const key = "glc_canary-api-key"
	withCreds := strings.Replace(srv.URL, "http://", "http://12345:"+key+"@", 1)
	p, err := lokipush.New(lokipush.Config{URL: withCreds, FlushInterval: time.Hour})
	require.NoError(t, err)
	slog.New(p.Handler(slog.LevelInfo)).Info("hello")
	require.NoError(t, p.Close())
	require.Len(t, loki.auth, 1)
	assert.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte("12345:"+key)), loki.auth[0])
	assert.NotContains(t, p.URL(), key)
	assert.Contains(t, p.URL(), "12345")

	for _, bad := range []string{"ftp://12345:" + key + "@loki", "http://12345:" + key + "@loki:port:3100"} {
		_, err := lokipush.New(lokipush.Config{URL: bad})
		require.Error(t, err, bad)
		assert.NotContains(t, err.Error(), key, "a refused URL does not echo its password")
	}
}
