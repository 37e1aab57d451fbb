package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/truora/minidyn/aws-v2/client"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

var _ Backend = (*client.Client)(nil)

// openJournaled starts "local mode" over dir: a fresh minidyn, the table,
// the journal replayed into it, and a Store on top.
func openJournaled(t *testing.T, dir string) (*store.Store, *Journal) {
	t.Helper()
	ctx := context.Background()
	db := client.NewClient()
	require.NoError(t, store.CreateTable(ctx, db, ""))
	j, err := Open(ctx, db, dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return store.New(j, "", clock.NewFake(t0).Now), j
}

func journalLines(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, File))
	require.NoError(t, err)
	return bytes.Count(b, []byte("\n"))
}

func TestJournalReplaysEverything(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	s, j := openJournaled(t, dir)
	mustSite(t, s, "s1", "Paris")
	require.NoError(t, s.CreateProfile(ctx, domain.Profile{ID: "p1", SiteID: "s1", Name: "gpu"}))
	require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "h100x8", GPUsTotal: 8, Active: true}))
	require.NoError(t, s.CreateNode(ctx, domain.Node{ID: "n1", SiteID: "s1", Hostname: "gpu01"}))
	require.NoError(t, s.CreateOnboarding(ctx, onboarding("o1", "s1", "gpu01")))
	require.NoError(t, s.CreateOnboarding(ctx, onboarding("o2", "s1", "gpu02")))
	_, err := s.UpdateOnboarding(ctx, "o2", func(o *domain.Onboarding) error { o.Status = domain.OnboardingFailed; return nil })
	require.NoError(t, err)
	_, err = s.UpdateOnboarding(ctx, "o1", func(o *domain.Onboarding) error {
		o.Status, o.Stage, o.Error = domain.OnboardingRunning, domain.StageDeploy, &domain.Failure{Code: "X", Message: "y"}
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, s.AppendOnboardingEvents(ctx,
		domain.TimelineEntry{OnboardingID: "o1", Kind: domain.TimelineStageEntered, Stage: domain.StageDeploy},
		domain.TimelineEntry{OnboardingID: "o1", Kind: domain.TimelineMAASEvent, MAASEventID: 7, Time: t0}))
	require.NoError(t, s.PutEnrollmentToken(ctx, domain.EnrollmentToken{Hash: "h1", NodeID: "n1", ExpiresAt: t0.Add(time.Hour)}))
	_, err = s.ConsumeEnrollmentToken(ctx, "h1", "n1", t0)
	require.NoError(t, err)
	require.NoError(t, s.PutEnrollmentToken(ctx, domain.EnrollmentToken{Hash: "h2", NodeID: "n1", ExpiresAt: t0.Add(time.Hour)}))
	require.NoError(t, s.RevokeEnrollmentToken(ctx, "h2", t0))
	_, err = s.UpsertRoCEAssignments(ctx, "s1", []domain.RoCEAssignment{roce("gpu01", "ens1", "10.0.0.1/31"), roce("gpu01", "ens2", "10.0.0.3/31")})
	require.NoError(t, err)
	require.NoError(t, s.DeleteRoCEAssignment(ctx, "s1", "gpu01:ens2"))
	require.NoError(t, s.AppendAudit(ctx, domain.AuditEntry{Actor: "admin", Action: "x"}))
	// A refused write leaves no line behind.
	linesBefore := journalLines(t, dir)
	require.Error(t, s.CreateOnboarding(ctx, onboarding("o3", "s1", "gpu01")))
	assert.Equal(t, linesBefore, journalLines(t, dir))

	wantSite, err := s.GetSite(ctx, "s1")
	require.NoError(t, err)
	wantO1, err := s.GetOnboarding(ctx, "o1")
	require.NoError(t, err)
	wantTimeline, err := s.ListOnboardingEvents(ctx, "o1")
	require.NoError(t, err)
	require.NoError(t, j.Close())
	_, err = s.GetSite(ctx, "s1")
	require.NoError(t, err, "reads still work")
	require.ErrorContains(t, s.CreateSKU(ctx, domain.SKU{ID: "late"}), "journal closed")
	_, err = s.GetSKU(ctx, "late")
	require.ErrorAs(t, err, new(*store.ItemNotFoundError), "a refused write is not applied either")

	// Restart.
	r, _ := openJournaled(t, dir)
	site, err := r.GetSite(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, wantSite, site)
	o1, err := r.GetOnboarding(ctx, "o1")
	require.NoError(t, err)
	assert.Equal(t, wantO1, o1)
	timeline, err := r.ListOnboardingEvents(ctx, "o1")
	require.NoError(t, err)
	assert.Equal(t, wantTimeline, timeline)

	checks := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"indexes rebuilt", func(t *testing.T) {
			t.Helper()
			page, err := r.ListOnboardings(ctx, store.OnboardingFilter{Status: domain.OnboardingRunning})
			require.NoError(t, err)
			require.Len(t, page.Items, 1)
			assert.Equal(t, "o1", page.Items[0].ID)
		}},
		{"host lock kept", func(t *testing.T) {
			t.Helper()
			require.ErrorAs(t, r.CreateOnboarding(ctx, onboarding("o4", "s1", "gpu01")), new(*store.OpenOnboardingExistsError))
		}},
		{"released lock stays released", func(t *testing.T) {
			t.Helper()
			require.NoError(t, r.CreateOnboarding(ctx, onboarding("o5", "s1", "gpu02")))
		}},
		{"site name still taken", func(t *testing.T) {
			t.Helper()
			require.ErrorAs(t, r.CreateSite(ctx, domain.Site{ID: "s9", Name: "paris"}), new(*store.ItemConflictError))
		}},
		{"token still consumed", func(t *testing.T) {
			t.Helper()
			_, err := r.ConsumeEnrollmentToken(ctx, "h1", "n1", t0)
			var re *store.TokenRejectedError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, store.TokenConsumed, re.Reason)
		}},
		{"token still revoked", func(t *testing.T) {
			t.Helper()
			_, err := r.ConsumeEnrollmentToken(ctx, "h2", "n1", t0)
			var re *store.TokenRejectedError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, store.TokenRevoked, re.Reason)
			tok, err := r.GetEnrollmentToken(ctx, "h2")
			require.NoError(t, err)
			require.NotNil(t, tok.RevokedAt)
			assert.True(t, t0.Equal(*tok.RevokedAt))
		}},
		{"deleted row stays deleted", func(t *testing.T) {
			t.Helper()
			rows, err := r.ListRoCEAssignments(ctx, "s1", "gpu01")
			require.NoError(t, err)
			require.Len(t, rows, 1)
			assert.Equal(t, "gpu01:ens1", rows[0].ID)
		}},
		{"node and its hostname", func(t *testing.T) {
			t.Helper()
			n, ok, err := r.FindNodeByHost(ctx, "s1", "gpu01")
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, "n1", n.ID)
		}},
		{"audit", func(t *testing.T) {
			t.Helper()
			a, err := r.ListAudit(ctx, 0)
			require.NoError(t, err)
			assert.Len(t, a, 2, "the operator's entry and the system's for the failed onboarding")
		}},
	}
	for _, c := range checks {
		t.Run(c.name, c.check)
	}
}

func TestJournalDropsATornLastLine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, j := openJournaled(t, dir)
	require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "k1"}))
	require.NoError(t, j.Close())
	path := filepath.Join(dir, File)
	intact, err := os.ReadFile(path)
	require.NoError(t, err)

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(`{"t":"maasflow","put":{"pk":{"S":"SK`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	r, _ := openJournaled(t, dir)
	_, err = r.GetSKU(ctx, "k1")
	require.NoError(t, err)
	now, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, intact, now, "the torn tail is cut off")
	kept, err := filepath.Glob(path + ".damaged-*")
	require.NoError(t, err)
	require.Len(t, kept, 1, "the file as found is kept for the operator")
	require.NoError(t, r.CreateSKU(ctx, domain.SKU{ID: "k2"}), "and appends go on after it")
}

func TestJournalRefusesACorruptLine(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, File), []byte("{oops}\n{}\n"), 0o600))
	db := client.NewClient()
	require.NoError(t, store.CreateTable(context.Background(), db, ""))
	_, err := Open(context.Background(), db, dir)
	var damaged *DamagedError
	require.ErrorAs(t, err, &damaged)
	assert.Equal(t, 1, damaged.Line)
	assert.Contains(t, err.Error(), "move it aside", "the message tells the operator what to do")
}

func TestJournalRefusesMissingRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, j := openJournaled(t, dir)
	for _, id := range []string{"k1", "k2", "k3"} {
		require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: id}))
	}
	require.NoError(t, j.Close())
	path := filepath.Join(dir, File)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.SplitAfter(b, []byte("\n"))
	require.NoError(t, os.WriteFile(path, append(append([]byte{}, lines[0]...), lines[2]...), 0o600)) // drop the middle record

	db := client.NewClient()
	require.NoError(t, store.CreateTable(ctx, db, ""))
	_, err = Open(ctx, db, dir)
	var damaged *DamagedError
	require.ErrorAs(t, err, &damaged)
	assert.Equal(t, 2, damaged.Line)
	assert.Contains(t, damaged.Reason, "record 3 follows record 1")
}

func TestJournalCompacts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, j := openJournaled(t, dir)
	require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "k"}))
	for i := range 1500 {
		_, err := s.UpdateSKU(ctx, "k", func(x *domain.SKU) error { x.GPUsTotal = i; return nil })
		require.NoError(t, err)
	}
	assert.Less(t, journalLines(t, dir), 1000, "rewritten once superseded lines piled up")

	require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "gone"}))
	require.NoError(t, j.Compact(ctx))
	assert.Equal(t, 2, journalLines(t, dir), "one line per live item")
	require.NoError(t, j.Close())

	r, _ := openJournaled(t, dir)
	got, err := r.GetSKU(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, 1499, got.GPUsTotal)
	assert.Equal(t, int64(1501), got.Version)
}

func TestAttributeValueJSONRoundTrip(t *testing.T) {
	item := map[string]types.AttributeValue{
		"s":    &types.AttributeValueMemberS{Value: "x"},
		"n":    &types.AttributeValueMemberN{Value: "12.5"},
		"b":    &types.AttributeValueMemberB{Value: []byte{0, 1, 2}},
		"bool": &types.AttributeValueMemberBOOL{Value: true},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":   &types.AttributeValueMemberNS{Value: []string{"1", "2"}},
		"bs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}},
		"l":    &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "y"}}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"inner": &types.AttributeValueMemberN{Value: "3"},
		}},
	}
	for name, av := range item {
		t.Run(name, func(t *testing.T) {
			js, err := avToJSON(av)
			require.NoError(t, err)
			b, err := json.Marshal(js)
			require.NoError(t, err)
			var tagged taggedAV
			require.NoError(t, json.Unmarshal(b, &tagged))
			back, err := tagged.value()
			require.NoError(t, err)
			assert.Equal(t, av, back)
		})
	}
	for _, bad := range []string{`{}`, `{"S":"a","N":"1"}`, `{"X":1}`, `[]`} {
		var tagged taggedAV
		err := json.Unmarshal([]byte(bad), &tagged)
		if err == nil {
			_, err = tagged.value()
		}
		assert.Error(t, err, bad)
	}
}

func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "maasflow")
	defer func() { _ = os.RemoveAll(dir) }()

	// Local mode at every start: the in-memory database with the table,
	// and the journal in the data directory replayed into it.
	for run := 1; run <= 2; run++ {
		db, err := store.NewLocalDB(ctx, store.DefaultTable)
		if err != nil {
			fmt.Println(err)
			return
		}
		j, err := Open(ctx, db, dir)
		if err != nil {
			fmt.Println(err)
			return
		}
		s := store.New(j, store.DefaultTable, time.Now)
		if run == 1 {
			_ = s.CreateSKU(ctx, domain.SKU{ID: "h100x8", GPUModel: "H100", GPUsTotal: 8})
		}
		skus, _ := s.ListSKUs(ctx)
		fmt.Printf("run %d: %d SKU(s)\n", run, len(skus))
		_ = j.Close()
	}
	// Output:
	// run 1: 1 SKU(s)
	// run 2: 1 SKU(s)
}

func TestJournalCompactsAtOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var b bytes.Buffer
	for i := range 1200 {
		fmt.Fprintf(&b, `{"t":"maasflow","put":{"pk":{"S":"SKUS"},"sk":{"S":"SKU#k"},"id":{"S":"k"},"gpus_total":{"N":"%d"},"version":{"N":"1"}}}`+"\n", i)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, File), b.Bytes(), 0o600))

	db, err := store.NewLocalDB(ctx, "")
	require.NoError(t, err)
	j, err := Open(ctx, db, dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	assert.Equal(t, 1, journalLines(t, dir))
	sku, err := store.New(j, "", nil).GetSKU(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, 1199, sku.GPUsTotal)
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// onboarding is an onboarding of host; each host has its own BMC address,
// as each server does (the store locks it).
func onboarding(id, site, host string) domain.Onboarding {
	ip := "10.0.0." + strconv.Itoa(1+int(crc32.ChecksumIEEE([]byte(host))%250))
	return domain.Onboarding{ID: id, SiteID: site, ProfileID: "p1", SKUID: "h100x8", Hostname: host, IPMIIP: ip}
}

func mustSite(t *testing.T, s *store.Store, id, name string) {
	t.Helper()
	require.NoError(t, s.CreateSite(context.Background(), domain.Site{ID: id, Name: name, MAASURL: "http://maas.example/MAAS"}))
}

func roce(host, iface, cidr string) domain.RoCEAssignment {
	return domain.RoCEAssignment{Hostname: host, Interface: iface, IPv4CIDR: cidr}
}

// fullDisk takes half of each write and then fails, as a full disk does.
type fullDisk struct {
	file
	full bool
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if !d.full {
		return d.file.Write(p)
	}
	n, _ := d.file.Write(p[:len(p)/2])
	return n, syscall.ENOSPC
}

func TestAWriteTheDiskRefusesIsUndone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, j := openJournaled(t, dir)
	require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "k1", GPUsTotal: 1}))
	disk := &fullDisk{file: j.f, full: true}
	j.f = disk
	path := filepath.Join(dir, File)
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	require.ErrorIs(t, s.CreateSKU(ctx, domain.SKU{ID: "k2"}), syscall.ENOSPC)
	_, err = s.GetSKU(ctx, "k2")
	require.ErrorAs(t, err, new(*store.ItemNotFoundError), "a refused create is not served afterwards")
	_, err = s.UpdateSKU(ctx, "k1", func(k *domain.SKU) error { k.GPUsTotal = 8; return nil })
	require.ErrorIs(t, err, syscall.ENOSPC)
	got, err := s.GetSKU(ctx, "k1")
	require.NoError(t, err)
	assert.Equal(t, 1, got.GPUsTotal, "a refused update leaves the record as it was")
	require.ErrorIs(t, s.CreateOnboarding(ctx, onboarding("o1", "s1", "gpu01")), syscall.ENOSPC, "a transaction too")
	_, err = s.GetOnboarding(ctx, "o1")
	require.ErrorAs(t, err, new(*store.ItemNotFoundError))
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the half-written records are cut from the file")

	disk.full = false
	require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "k2"}), "writes go on once there is room")
	require.NoError(t, j.Close())
	r, _ := openJournaled(t, dir)
	_, err = r.GetSKU(ctx, "k2")
	require.NoError(t, err)
	got, err = r.GetSKU(ctx, "k1")
	require.NoError(t, err)
	assert.Equal(t, 1, got.GPUsTotal)
}

func TestATransactionIsOneRecord(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := openJournaled(t, dir)
	before := journalLines(t, dir)
	require.NoError(t, s.CreateOnboarding(ctx, onboarding("o1", "s1", "gpu01"))) // record and host lock
	assert.Equal(t, before+1, journalLines(t, dir), "replayed whole or not at all")
}

func TestAppendItemRoundTrips(t *testing.T) {
	item := map[string]types.AttributeValue{
		"plain":   &types.AttributeValueMemberS{Value: "gpu-01"},
		"tricky":  &types.AttributeValueMemberS{Value: "quote \" backslash \\ newline \n tab \t nul \x00 bell \x07 <html> & é 中 \u2028"},
		"n":       &types.AttributeValueMemberN{Value: "-12.5e3"},
		"b":       &types.AttributeValueMemberB{Value: []byte{0, 255, 10}},
		"bool":    &types.AttributeValueMemberBOOL{Value: false},
		"null":    &types.AttributeValueMemberNULL{Value: true},
		"ss":      &types.AttributeValueMemberSS{Value: []string{"a", "\"b\""}},
		"ns":      &types.AttributeValueMemberNS{Value: []string{"1"}},
		"bs":      &types.AttributeValueMemberBS{Value: [][]byte{{1}, {}}},
		"l":       &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "x"}, &types.AttributeValueMemberN{Value: "2"}}},
		"m":       &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k\"ey": &types.AttributeValueMemberS{Value: "v"}}},
		"empty s": &types.AttributeValueMemberS{Value: ""},
	}
	b, err := appendItem(nil, item)
	require.NoError(t, err)
	require.True(t, json.Valid(b), string(b))
	var raw map[string]*taggedAV
	require.NoError(t, json.Unmarshal(b, &raw))
	back, err := taggedItem(raw)
	require.NoError(t, err)
	assert.Equal(t, item, back)
}
