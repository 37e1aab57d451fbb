package localstack

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
)

// connectorTokenPath hands an admin a site's connector token:
// GET /_connector/v1/token?site=<id> with the admin bearer token. The AWS
// deployment has no such route: there a connector runs as its site's IAM
// user (docs/deploy.md).
const connectorTokenPath = "/_connector/v1/token" //nolint:gosec // G101: a URL path, not a credential

func (s *Stack) connectorToken(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok != s.AdminToken {
		http.Error(w, "the admin token is required", http.StatusUnauthorized)
		return
	}
	site := r.URL.Query().Get("site")
	if _, err := s.Store.GetSite(r.Context(), site); err != nil {
		http.Error(w, "site: no such site", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"site": site, "token": s.Connectors.Token(site)})
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
