package boltdb_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
	"github.com/maasflow/maasflow/shared/store/boltdb"
)

// fullDiskChildEnv makes the test binary play a process whose disk fills
// up: its files may not grow past a few hundred KiB (RLIMIT_FSIZE, with
// SIGXFSZ ignored, so a write past it fails as on a full disk).
const fullDiskChildEnv = "MAASFLOW_BOLTDB_FULL_DISK_CHILD"

const fileLimit = 512 << 10

// fillDisk creates onboardings (each a transaction of several items) until
// one is refused, printing "ok ID" for each acknowledged and "refused ID
// unavailable=BOOL" for the first refused.
func fillDisk(dir string) {
	signal.Ignore(syscall.SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: fileLimit, Max: fileLimit}); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	ctx := context.Background()
	db, err := store.OpenLocalDB(ctx, filepath.Join(dir, dbFile), "", false)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	s := store.New(db, "", time.Now)
	pad := strings.Repeat("x", 2000)
	for i := range 100_000 {
		id := fmt.Sprintf("o-%05d", i)
		err := s.CreateOnboarding(ctx, domain.Onboarding{
			ID: id, SiteID: "s1", ProfileID: "p1", SKUID: "k1", Hostname: fmt.Sprintf("gpu-%05d", i), IPMIIP: fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256+1),
			Status: domain.OnboardingRunning, Attempt: 1, CorrelationID: pad, CreatedAt: time.Now(),
		})
		if err != nil {
			var we *boltdb.WriteError
			fmt.Println("refused", id, "unavailable="+fmt.Sprint(errors.As(err, &we) && we.Unavailable()), err)
			os.Exit(0)
		}
		fmt.Println("ok", id)
	}
	fmt.Println("error the disk never filled")
	os.Exit(1)
}

// TestAFullDiskRefusesTheWriteAndKeepsNothingOfIt: the write the disk
// refuses fails as unavailable (the API's 503), every acknowledged write
// is in the file, and nothing of the refused transaction is.
func TestAFullDiskRefusesTheWriteAndKeepsNothingOfIt(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.CommandContext(context.Background(), os.Args[0], "-test.run=^$") //nolint:gosec // G204: the test binary itself
	cmd.Env = append(os.Environ(), fullDiskChildEnv+"=1")
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err, "child: %s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(last, "refused "), "the child ends refused, got %q", last)
	fields := strings.Fields(last)
	refusedID := fields[1]
	assert.Equal(t, "unavailable=true", fields[2])
	acked := lines[:len(lines)-1]
	require.NotEmpty(t, acked)

	ctx := context.Background()
	db, err := store.OpenLocalDB(ctx, filepath.Join(dir, dbFile), "", true)
	require.NoError(t, err, "the file is whole")
	t.Cleanup(func() { _ = db.Close() })
	s := store.New(db, "", time.Now)
	for _, l := range acked {
		id := strings.TrimPrefix(l, "ok ")
		_, err := s.GetOnboarding(ctx, id)
		require.NoError(t, err, id)
	}
	_, err = s.GetOnboarding(ctx, refusedID)
	require.ErrorAs(t, err, new(*store.ItemNotFoundError))
	scan, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(store.DefaultTable)})
	require.NoError(t, err)
	for _, item := range scan.Items {
		for _, v := range item {
			if sv, ok := v.(*types.AttributeValueMemberS); ok {
				require.NotContains(t, sv.Value, refusedID, "no item of the refused transaction")
			}
		}
	}
}
