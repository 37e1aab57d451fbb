package localstack

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// connectorTokenPath issues an admin a site's connector token:
// GET /_connector/v1/token?site=<id> with the admin bearer token;
// connectorRotatePath (POST, same query) rotates the site's tokens. The
// AWS deployment has no such routes: there a connector runs as its site's
// IAM user (docs/deploy.md).
const (
	connectorTokenPath  = "/_connector/v1/token"        //nolint:gosec // G101: a URL path, not a credential
	connectorRotatePath = "/_connector/v1/token/rotate" //nolint:gosec // G101: a URL path, not a credential
)

// newBroker is the local connector transport: tokens keyed by the data
// dir's connector key, their generations kept next to it, and a connector
// of a disabled or deleted site refused. Connector deadlines come from
// request contexts, which run on the wall clock whatever the time scale.
func (s *Stack) newBroker(dataDir string) (*connector.Broker, error) {
	key, err := loadOrCreateKey(filepath.Join(dataDir, "connector.key"))
	if err != nil {
		return nil, err
	}
	tokens, err := connector.OpenTokens(key, filepath.Join(dataDir, "connector-tokens.json"), 0, 0, time.Now)
	if err != nil {
		return nil, err
	}
	b := connector.NewBrokerWith(tokens, time.Now)
	b.SiteActive = s.siteActive
	return b, nil
}

// siteActive: a site's connector is served while the site exists and is
// not disabled.
func (s *Stack) siteActive(ctx context.Context, site string) (bool, error) {
	rec, err := s.Store.GetSite(ctx, site)
	var nf *store.ItemNotFoundError
	switch {
	case errors.As(err, &nf):
		return false, nil
	case err != nil:
		return false, err
	}
	return rec.Status != domain.StatusDisabled, nil
}

// connectorTokenAnswer is what the token routes answer.
type connectorTokenAnswer struct {
	Site      string    `json:"site"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (s *Stack) connectorToken(w http.ResponseWriter, r *http.Request) {
	site, ok := s.connectorTokenSite(w, r, "connector.token.issue")
	if !ok {
		return
	}
	tok, exp := s.Connectors.Tokens().Issue(site)
	if !s.auditConnectorToken(w, r, "connector.token.issue", site) {
		return
	}
	writeTokenAnswer(w, connectorTokenAnswer{Site: site, Token: tok, ExpiresAt: exp})
}

func (s *Stack) rotateConnectorToken(w http.ResponseWriter, r *http.Request) {
	site, ok := s.connectorTokenSite(w, r, "connector.token.rotate")
	if !ok {
		return
	}
	tok, exp, err := s.Connectors.Tokens().Rotate(site)
	if err != nil {
		s.logger.Error("rotate connector token", "site", site, "error", err.Error())
		http.Error(w, "the rotation could not be saved; the old tokens still work", http.StatusInternalServerError)
		return
	}
	if !s.auditConnectorToken(w, r, "connector.token.rotate", site) {
		return
	}
	writeTokenAnswer(w, connectorTokenAnswer{Site: site, Token: tok, ExpiresAt: exp})
}

// connectorTokenSite checks the admin token and the site of a token route;
// a refused call is answered and audited as denied.
func (s *Stack) connectorTokenSite(w http.ResponseWriter, r *http.Request, action string) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.AdminToken)) != 1 {
		http.Error(w, "the admin token is required", http.StatusUnauthorized)
		return "", false
	}
	site := r.URL.Query().Get("site")
	rec, err := s.Store.GetSite(r.Context(), site)
	if err != nil {
		http.Error(w, "site: no such site", http.StatusNotFound)
		return "", false
	}
	if rec.Status == domain.StatusDisabled {
		_ = s.appendTokenAudit(r.Context(), action, site, "denied")
		http.Error(w, "site: "+site+" is disabled; enable it before issuing its connector a token", http.StatusConflict)
		return "", false
	}
	return site, true
}

// auditConnectorToken records an issued or rotated token (never the token
// itself) before it is handed out: no token leaves unaudited.
func (s *Stack) auditConnectorToken(w http.ResponseWriter, r *http.Request, action, site string) bool {
	if err := s.appendTokenAudit(r.Context(), action, site, "ok"); err != nil {
		s.logger.Error("audit connector token", "site", site, "action", action, "error", err.Error())
		http.Error(w, "the audit entry could not be written; no token was issued", http.StatusInternalServerError)
		return false
	}
	return true
}

func (s *Stack) appendTokenAudit(ctx context.Context, action, site, result string) error {
	return s.Store.AppendAudit(ctx, domain.AuditEntry{Actor: "local-admin", Action: action, Target: "site:" + site, Result: result})
}

func writeTokenAnswer(w http.ResponseWriter, a connectorTokenAnswer) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(a)
}

// ConnectorToken returns a site's connector token (tests, the banner).
func (s *Stack) ConnectorToken(site string) string { return s.Connectors.Token(site) }

// loadOrCreateKey reads the 32-byte key at path, creating it on first use,
// so connector tokens survive a restart.
func loadOrCreateKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: a file in the stack's data directory
	switch {
	case err == nil && len(b) == connectorKeyBytes:
		return b, nil
	case err == nil:
		// A new key would silently change every connector token already
		// handed out: a damaged key is the operator's to restore.
		return nil, fmt.Errorf("connector key %s holds %d bytes, not %d: it was emptied or cut short; restore it from a backup, or start afresh with --reset (connectors then need new tokens)",
			path, len(b), connectorKeyBytes)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read connector key: %w", err)
	}
	b = make([]byte, connectorKeyBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("make connector key: %w", err)
	}
	// Written aside and renamed, so a crash never leaves a short key.
	tmp := path + ".new"
	if err := writeSynced(tmp, b); err != nil {
		return nil, fmt.Errorf("write connector key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("write connector key: %w", err)
	}
	return b, nil
}

// connectorKeyBytes is the connector token key's length.
const connectorKeyBytes = 32

// writeSynced writes b to a new 0600 file at path and fsyncs it.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) //nolint:gosec // G304: a file in the stack's data directory
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
