package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	bolt "go.etcd.io/bbolt"
)

// LegacyFileName is the JSON-lines event file earlier releases kept in the
// data directory, one envelope a line; local mode moves it into the
// database file once (MigrateJSONL).
const LegacyFileName = "events.jsonl"

// migratedKey marks, in the bus's bucket of marks, that an event file was
// moved in: a crash after the move and before the file is renamed aside
// does not move it twice.
var (
	marksBucket = []byte("events.marks")
	migratedKey = []byte("migrated:" + LegacyFileName)
)

// DamagedEventsError is an earlier release's event file holding a line
// that is not an event envelope: nothing is moved from it.
type DamagedEventsError struct {
	Path string
	Line int
}

func (e *DamagedEventsError) Error() string {
	return fmt.Sprintf("local event bus: line %d of %s is not an event envelope; the file is damaged: restore it from a backup, "+
		"or move it out of the data directory to start without its events", e.Line, e.Path)
}

// MigrateJSONL moves the events of an earlier release's event file at path
// into db's bus, in the file's order, in one transaction, and returns how
// many it moved. A last line without its newline is an append that release
// never acknowledged (it fsynced each event before delivering it): it is
// left out and torn is true. A whole line that is not an envelope is a
// *DamagedEventsError, with nothing moved. A file already moved (a crash
// came before the caller renamed it aside) is not moved again: n is 0.
func MigrateJSONL(path string, db LocalDB) (n int, torn bool, err error) {
	f, err := os.Open(path) //nolint:gosec // G304: the operator's data directory
	if err != nil {
		return 0, false, fmt.Errorf("read events %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read-only
	var values [][]byte
	r := bufio.NewReader(f)
	for line := 1; ; line++ {
		b, rerr := r.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return 0, false, fmt.Errorf("read events %s: %w", path, rerr)
		}
		if errors.Is(rerr, io.EOF) {
			torn = len(b) > 0
			break
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		var env Envelope
		if json.Unmarshal(b, &env) != nil || env.ID == "" {
			return 0, false, &DamagedEventsError{Path: path, Line: line}
		}
		values = append(values, b)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		n = 0
		marks, err := tx.CreateBucketIfNotExists(marksBucket)
		if err != nil {
			return err
		}
		if marks.Get(migratedKey) != nil {
			return nil
		}
		if _, err := tx.CreateBucketIfNotExists(Bucket); err != nil {
			return err
		}
		for _, v := range values {
			if err := put(tx, v); err != nil {
				return err
			}
		}
		n = len(values)
		return marks.Put(migratedKey, []byte("1"))
	})
	if err != nil {
		return 0, false, fmt.Errorf("move events %s into the database: %w", path, err)
	}
	return n, torn, nil
}
