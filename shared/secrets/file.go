package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// FileStore keeps secrets in one JSON file (name → base64 value) readable by
// its owner only. Every Put rewrites the file through a temporary file and a
// rename, so a crash leaves either the old or the new content, never half.
// It serves one process: the mutex orders that process's writers.
type FileStore struct {
	path string
	mu   sync.Mutex
}

var (
	_ Putter = (*FileStore)(nil)
	_ Getter = (*FileStore)(nil)
)

// NewFileStore returns a FileStore over path. The file and its directory are
// created on the first Put.
func NewFileStore(path string) *FileStore { return &FileStore{path: path} }

// Put writes value under name, replacing any earlier value.
func (f *FileStore) Put(ctx context.Context, name string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put secret %s: %w", name, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	all, err := f.load()
	if err != nil {
		return fmt.Errorf("put secret %s: %w", name, err)
	}
	all[name] = append([]byte(nil), value...)
	if err := f.save(all); err != nil {
		return fmt.Errorf("put secret %s: %w", name, err)
	}
	return nil
}

// Get returns the value of name, or *SecretNotFoundError.
func (f *FileStore) Get(ctx context.Context, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	all, err := f.load()
	if err != nil {
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	}
	v, ok := all[name]
	if !ok {
		return nil, &SecretNotFoundError{Name: name}
	}
	return v, nil
}

// Check reads the whole file and reports whether it can be served: a
// damaged file (cut short, overwritten) is an error at start-up instead of
// a failure in the middle of an onboarding. A missing file is fine (no
// secret stored yet). The error never quotes the content.
func (f *FileStore) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.load(); err != nil {
		return fmt.Errorf("%w; restore it from a backup, or move it aside and store the credentials again", err)
	}
	return nil
}

func (f *FileStore) load() (map[string][]byte, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read secrets file: %w", err)
	}
	all := map[string][]byte{}
	if len(b) == 0 {
		// save never writes an empty file (no secret is "{}"): an empty
		// one was emptied or cut short, and serving it as "no secrets"
		// would lose every site's credentials silently.
		return nil, fmt.Errorf("secrets file %s is empty (0 bytes): it was emptied or cut short", f.path)
	}
	if err := json.Unmarshal(b, &all); err != nil {
		// json errors can quote the content; never pass them on.
		return nil, fmt.Errorf("secrets file %s is not a JSON object of base64 values", f.path)
	}
	return all, nil
}

func (f *FileStore) save(all map[string][]byte) error {
	b, err := json.Marshal(all)
	if err != nil {
		return fmt.Errorf("encode secrets file: %w", err)
	}
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create secrets directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+".*")
	if err != nil {
		return fmt.Errorf("create temporary secrets file: %w", err)
	}
	// After a successful rename the name is gone and Remove fails harmlessly.
	defer func() { _ = os.Remove(tmp.Name()) }()
	// CreateTemp already uses 0600; Chmod keeps that true under any umask.
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("restrict temporary secrets file: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write temporary secrets file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sync temporary secrets file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close temporary secrets file: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("replace secrets file: %w", err)
	}
	return nil
}
