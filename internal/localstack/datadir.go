package localstack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile is the data directory's lock, held while a stack runs.
const lockFile = ".lock"

// DataDirInUseError is a start refused because another process holds the
// data directory: two stacks replaying and appending one journal would each
// serve a different database and corrupt the file for both.
type DataDirInUseError struct {
	Dir string
	PID int // the holder's process id as it wrote it; 0 when unknown
}

func (e *DataDirInUseError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = fmt.Sprintf("another process (pid %d)", e.PID)
	}
	return fmt.Sprintf("data directory %s is in use by %s: stop that maasflow local, or pass another --data-dir", e.Dir, holder)
}

// lockDataDir takes an exclusive lock on dir for the life of the process
// (the kernel drops it when the process dies, kill -9 included); unlock
// releases it.
func lockDataDir(dir string) (unlock func() error, err error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600) //nolint:gosec // G304: the path is the operator's data directory, never a request value
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer func() { _ = f.Close() }()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := os.ReadFile(path) //nolint:gosec // G304: as above
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return nil, &DataDirInUseError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	// The pid is for the message a second stack prints; the lock is the
	// flock, not the file's content.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() error {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return f.Close()
	}, nil
}
