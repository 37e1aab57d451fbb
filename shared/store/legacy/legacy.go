// Package legacy reads the write journal of local mode's earlier releases
// (dynamodb.jsonl in the data directory: one JSON line per write, the
// resulting state of each item it touched) once, to move its state into
// the database file. It is a reader only; nothing writes that format any
// more.
package legacy

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// JournalFile is the journal's name inside the data directory.
const JournalFile = "dynamodb.jsonl"

// JournalDamagedError is a journal that cannot be read whole: a line in the
// middle is not a record, or records are missing between two others.
type JournalDamagedError struct {
	Path   string
	Line   int
	Reason string
}

func (e *JournalDamagedError) Error() string {
	return fmt.Sprintf("journal %s is damaged at line %d: %s; it was not migrated: restore it from a backup, or start with an empty database with --reset", e.Path, e.Line, e.Reason)
}

// record is one line: a put, a delete, or a transaction of them.
type record struct {
	N     uint64               `json:"n"`
	Table string               `json:"t"`
	Put   map[string]*taggedAV `json:"put"`
	Del   map[string]*taggedAV `json:"del"`
	Tx    []record             `json:"tx"`
}

// Read replays the journal at path in order through put and del. A last
// line without its newline is a write the old release never acknowledged
// (it fsynced whole lines before answering): it is skipped, and torn
// reports it. Any other damage is a *JournalDamagedError.
func Read(path string, put, del func(table string, item map[string]types.AttributeValue) error) (records int, torn bool, err error) {
	f, err := os.Open(path) //nolint:gosec // G304: the operator's data directory
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = f.Close() }()
	r := bufio.NewReaderSize(f, 1<<20)
	var seq uint64
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return n - 1, len(line) > 0, nil
		}
		if err != nil {
			return n - 1, false, fmt.Errorf("read journal: %w", err)
		}
		var rec record
		if err := json.Unmarshal(line, &rec); err != nil {
			return n - 1, false, &JournalDamagedError{Path: path, Line: n, Reason: "the line is not a journal record"}
		}
		if rec.N != 0 { // the oldest files have no record numbers
			if seq != 0 && rec.N != seq+1 {
				return n - 1, false, &JournalDamagedError{Path: path, Line: n, Reason: fmt.Sprintf("record %d follows record %d: records are missing", rec.N, seq)}
			}
			seq = rec.N
		}
		if err := apply(rec, put, del); err != nil {
			return n - 1, false, &JournalDamagedError{Path: path, Line: n, Reason: err.Error()}
		}
	}
}

func apply(rec record, put, del func(table string, item map[string]types.AttributeValue) error) error {
	switch {
	case rec.Tx != nil:
		for _, sub := range rec.Tx {
			if err := apply(sub, put, del); err != nil {
				return err
			}
		}
		return nil
	case rec.Put != nil:
		item, err := taggedItem(rec.Put)
		if err != nil {
			return err
		}
		return put(rec.Table, item)
	case rec.Del != nil:
		key, err := taggedItem(rec.Del)
		if err != nil {
			return err
		}
		return del(rec.Table, key)
	}
	return errors.New("the record holds neither put, del nor tx")
}
