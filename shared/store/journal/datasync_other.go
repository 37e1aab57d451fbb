//go:build !linux

package journal

// syncData makes what was appended to f durable; fdatasync(2) is used on
// Linux only (datasync_linux.go).
func syncData(f file) error { return f.Sync() }
