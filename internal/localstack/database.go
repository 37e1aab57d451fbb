package localstack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/store"
	"github.com/maasflow/maasflow/shared/store/boltdb"
	"github.com/maasflow/maasflow/shared/store/legacy"
)

// DatabaseFile is local mode's database inside the data directory: the
// tables and their indexes, in one bbolt file.
const DatabaseFile = "maasflow.db"

// migratedSuffix is added to an earlier release's journal once its state
// is in the database file: kept as the operator's copy, never read again.
const migratedSuffix = ".migrated"

// openDatabase opens the data directory's database file, checking every
// page first (a damaged file is refused, never served), and moves the
// state of an earlier release's journal and event file into it on the
// first start.
func openDatabase(ctx context.Context, dir string, logger *slog.Logger) (*boltdb.DB, error) {
	db, err := store.OpenLocalDB(ctx, filepath.Join(dir, DatabaseFile), store.DefaultTable, true)
	if err != nil {
		return nil, fmt.Errorf("open local database: %w", err)
	}
	if err := migrateJournal(dir, db, logger); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := migrateEvents(dir, db, logger); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// migrateJournal loads the journal an earlier release kept (dynamodb.jsonl)
// into db in one transaction, then renames it aside. A crash before the
// rename runs it again at the next start, which writes the same state.
func migrateJournal(dir string, db *boltdb.DB, logger *slog.Logger) error {
	path := filepath.Join(dir, legacy.JournalFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	var records int
	var torn bool
	err := db.Import(func(put, del func(string, map[string]types.AttributeValue) error) error {
		var err error
		records, torn, err = legacy.Read(path, put, del)
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate %s into %s: %w", path, DatabaseFile, err)
	}
	if err := os.Rename(path, path+migratedSuffix); err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	logger.Warn("moved the data of an earlier release's journal into the database file",
		"journal", path, "records", records, "kept_as", path+migratedSuffix)
	if torn {
		logger.Error("the journal ended in a write the earlier release never acknowledged; it was not migrated", "journal", path)
	}
	return nil
}

// migrateEvents moves the event file an earlier release kept (events.jsonl)
// into the database's event bus, then renames it aside. A damaged file is
// refused with what to do; a crash before the rename moves nothing twice.
func migrateEvents(dir string, db *boltdb.DB, logger *slog.Logger) error {
	path := filepath.Join(dir, events.LegacyFileName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	n, torn, err := events.MigrateJSONL(path, db)
	if err != nil {
		return fmt.Errorf("migrate %s into %s: %w", path, DatabaseFile, err)
	}
	if err := os.Rename(path, path+migratedSuffix); err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	logger.Warn("moved the events of an earlier release's event file into the database file",
		"events_file", path, "events", n, "kept_as", path+migratedSuffix)
	if torn {
		logger.Error("the event file ended in an event the earlier release never acknowledged; it was not migrated", "events_file", path)
	}
	return nil
}
