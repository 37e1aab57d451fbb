package boltdb

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// bbolt's meta page layout (go.etcd.io/bbolt internal/common/meta.go): a
// 16-byte page header, then magic, version, page size, flags (4 bytes
// each), the root bucket (16), the freelist page, the high-water page id,
// the transaction id and an FNV-64a checksum of what precedes it (8 each).
const (
	metaMagic       = 0xED0CDAED
	metaOffset      = 16
	metaChecksumEnd = metaOffset + 56
	metaBytes       = metaChecksumEnd + 8
)

// checkFileSize refuses a file shorter than its newest valid meta page
// says it is. bbolt maps the file and would fault (SIGSEGV, not a panic)
// reading a page past its end, so a file cut short must be caught before
// bbolt opens it. Meta pages that do not validate are left to bbolt,
// which reports them.
func checkFileSize(path string) error {
	f, err := os.Open(path) //nolint:gosec // G304: the operator's data directory
	if err != nil {
		return nil //nolint:nilerr // a missing file is a new database; bbolt reports other errors
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	var newest struct {
		txid, pgid uint64
		pageSize   uint32
		ok         bool
	}
	first := make([]byte, metaBytes)
	if _, err := io.ReadFull(f, first); err != nil {
		return &DamagedError{Path: path, Reason: "the file is shorter than its header"}
	}
	pageSize := int64(binary.LittleEndian.Uint32(first[metaOffset+8:]))
	if pageSize < 1024 || pageSize > 1<<16 {
		pageSize = int64(os.Getpagesize())
	}
	for i := range int64(2) {
		b := make([]byte, metaBytes)
		if _, err := f.ReadAt(b, i*pageSize); err != nil {
			continue
		}
		m := b[metaOffset:]
		if binary.LittleEndian.Uint32(m) != metaMagic {
			continue
		}
		h := fnv.New64a()
		_, _ = h.Write(b[metaOffset:metaChecksumEnd])
		if h.Sum64() != binary.LittleEndian.Uint64(b[metaChecksumEnd:]) {
			continue
		}
		txid := binary.LittleEndian.Uint64(m[48:])
		if !newest.ok || txid > newest.txid {
			newest.txid, newest.pgid, newest.pageSize, newest.ok = txid, binary.LittleEndian.Uint64(m[40:]), binary.LittleEndian.Uint32(m[8:]), true
		}
	}
	if !newest.ok {
		return nil
	}
	if want := newest.pgid * uint64(newest.pageSize); uint64(fi.Size()) < want { //nolint:gosec // G115: a file size is never negative
		return &DamagedError{Path: path, Reason: fmt.Sprintf("the file holds %d bytes, its pages need %d: it was cut short", fi.Size(), want)}
	}
	return nil
}
