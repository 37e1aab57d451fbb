package localstack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/maasflow/maasflow/shared/store/legacy"
)

// Files the stack keeps in its data directory besides its database.
const (
	// AdminTokenFile holds the generated admin token, so that a restart on
	// the same data directory keeps the token an operator exported.
	AdminTokenFile = "admin-token"
	// LogFile receives the stack's structured logs.
	LogFile       = "maasflow.log"
	secretsFile   = "secrets.json"
	eventsFile    = "events.jsonl" // an earlier release's event bus, moved into the database at start
	tokenFileMode = 0o600
)

// ownFiles are the names that mark a directory as a data directory.
var ownFiles = []string{DatabaseFile, legacy.JournalFile, secretsFile, eventsFile, AdminTokenFile, LogFile, lockFile}

// Reset empties a data directory so the next start begins from nothing. It
// refuses a directory holding none of the stack's files (a mistyped
// --data-dir must not wipe someone's home) and one a running stack holds.
func Reset(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read data dir: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	// A running stack holds the lock: wiping its files under it would
	// leave it serving a database that no longer exists on disk.
	unlock, err := lockDataDir(dir)
	if err != nil {
		return err
	}
	defer func() { _ = unlock() }()
	ours := false
	for _, e := range entries {
		for _, f := range ownFiles {
			if e.Name() == f {
				ours = true
			}
		}
	}
	if !ours {
		return fmt.Errorf("%s holds none of maasflow's files (%s); not resetting it", dir, strings.Join(ownFiles, ", "))
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("reset data dir: %w", err)
		}
	}
	return nil
}

// loadOrCreateToken returns the admin token kept in the data directory,
// creating it on first use.
func loadOrCreateToken(dir string) (string, error) {
	path := filepath.Join(dir, AdminTokenFile)
	b, err := os.ReadFile(path) //nolint:gosec // G304: the path is the operator's data directory, never a request value
	switch {
	case err == nil:
		if tok := strings.TrimSpace(string(b)); tok != "" {
			return tok, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read admin token: %w", err)
	}
	tok := randomToken()
	if err := os.WriteFile(path, []byte(tok+"\n"), tokenFileMode); err != nil {
		return "", fmt.Errorf("keep admin token: %w", err)
	}
	return tok, nil
}
