package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

const kindOnboarding = "onboarding"

// Page sizes of ListOnboardings.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// listRounds bounds the Queries behind one page when filters discard most
// rows: past it the page comes back short, with a cursor to go on.
const listRounds = 10

func onboardingKey(id string) key { return key{pkOnboarding + id, "ONB"} }

// openLockKey is the item that holds "the open onboarding of this host".
func openLockKey(siteID, hostname string) key {
	return key{pkOpenLock + siteID + "#" + hostKey(hostname), "OPEN"}
}

// Identities of one physical server besides its host name. Each open
// onboarding holds a lock item per identity it knows, so two onboardings of
// one server under two host names cannot both be open. The prefixes hold a
// ':', which no host name does, so they never read as a host name's lock.
const (
	LockHostname = "hostname"
	LockBMC      = "ipmi_ip"
	LockPXEMAC   = "pxe_mac"
	LockMachine  = "maas_system_id"
)

// serverLock is one lock item an open onboarding holds: which identity and
// its value.
type serverLock struct {
	identity, value string
}

func (l serverLock) key(siteID string) key {
	if l.identity == LockHostname {
		return openLockKey(siteID, l.value)
	}
	return key{pkOpenLock + siteID + "#" + l.identity + ":" + l.value, "OPEN"}
}

// serverLocks are the locks an onboarding holds while open: its host name,
// its BMC address, and the PXE MAC and MAAS machine once the workflow
// learned them. None when closed.
func serverLocks(o domain.Onboarding) []serverLock {
	if !domain.IsOpenStatus(o.Status) {
		return nil
	}
	locks := []serverLock{{LockHostname, hostKey(o.Hostname)}}
	if ip := canonicalIP(o.IPMIIP); ip != "" {
		locks = append(locks, serverLock{LockBMC, ip})
	}
	if mac := strings.ToLower(strings.TrimSpace(o.PXEMAC)); mac != "" {
		locks = append(locks, serverLock{LockPXEMAC, mac})
	}
	if o.MAASSystemID != "" {
		locks = append(locks, serverLock{LockMachine, o.MAASSystemID})
	}
	return locks
}

// canonicalIP writes an address one way (10.0.0.21, never 10.0.0.021 or
// ::ffff:10.0.0.21), so one BMC has one lock.
func canonicalIP(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return strings.ToLower(s)
	}
	return a.Unmap().String()
}

// lockDiff is what a write must release and take: locks of prev that next
// no longer holds, and the reverse.
func lockDiff(prev, next domain.Onboarding) (release, take []serverLock) {
	had := map[key]bool{}
	for _, l := range serverLocks(prev) {
		had[l.key(prev.SiteID)] = true
	}
	has := map[key]bool{}
	for _, l := range serverLocks(next) {
		has[l.key(next.SiteID)] = true
		if !had[l.key(next.SiteID)] {
			take = append(take, l)
		}
	}
	for _, l := range serverLocks(prev) {
		if !has[l.key(prev.SiteID)] {
			release = append(release, l)
		}
	}
	return release, take
}

type openLock struct {
	OnboardingID string    `dynamodbav:"onboarding_id"`
	SiteID       string    `dynamodbav:"site_id"`
	Hostname     string    `dynamodbav:"hostname"`
	Identity     string    `dynamodbav:"identity,omitempty"`
	Value        string    `dynamodbav:"value,omitempty"`
	Since        time.Time `dynamodbav:"since"`
}

func checkOnboarding(o domain.Onboarding) error {
	if err := checkID(kindOnboarding, "id", o.ID); err != nil {
		return err
	}
	if err := checkID(kindOnboarding, "site_id", o.SiteID); err != nil {
		return err
	}
	return checkID(kindOnboarding, "hostname", o.Hostname)
}

func onboardingItem(o domain.Onboarding) (map[string]types.AttributeValue, error) {
	sk := timeKey(o.CreatedAt) + "#" + o.ID
	return marshalItem(o, onboardingKey(o.ID), kindOnboarding, map[string]string{
		AttrGSI1PK: gsiAllOnboardings, AttrGSI1SK: sk,
		AttrGSI2PK: gsiOnbStatus + string(o.Status), AttrGSI2SK: sk,
		AttrGSI3PK: gsiOnbSite + o.SiteID, AttrGSI3SK: sk,
		AttrGSI4PK: gsiOnbHost + hostKey(o.Hostname), AttrGSI4SK: sk,
	})
}

func (s *Store) lockItem(o domain.Onboarding, l serverLock) (map[string]types.AttributeValue, error) {
	return marshalItem(openLock{OnboardingID: o.ID, SiteID: o.SiteID, Hostname: o.Hostname, Identity: l.identity, Value: l.value, Since: s.now()},
		l.key(o.SiteID), "open_onboarding", nil)
}

// lockHeld is the error for a lock another open onboarding holds, or
// errVersionConflict when it was freed since (the caller tries again).
func (s *Store) lockHeld(ctx context.Context, o domain.Onboarding, l serverLock) error {
	var lock openLock
	err := s.get(ctx, "open onboarding", l.value, l.key(o.SiteID), &lock)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return errVersionConflict
	}
	if err != nil {
		return err
	}
	e := &OpenOnboardingExistsError{SiteID: o.SiteID, Hostname: lock.Hostname, OnboardingID: lock.OnboardingID}
	if l.identity != LockHostname {
		e.Identity, e.Value = l.identity, l.value
	}
	return e
}

// CreateOnboarding writes the onboarding and takes its server locks (host
// name, BMC address, and PXE MAC and MAAS machine when already known) in
// one transaction: OpenOnboardingExistsError when another open onboarding
// holds one of them (Identity names which, empty for the host name). The
// record gets version 1, CreatedAt and UpdatedAt when zero and Status
// pending when empty. ItemConflictError when the id exists.
func (s *Store) CreateOnboarding(ctx context.Context, o domain.Onboarding) error {
	if err := checkOnboarding(o); err != nil {
		return err
	}
	stampOnboarding(s.now(), &o)
	item, err := onboardingItem(o)
	if err != nil {
		return err
	}
	if len(serverLocks(o)) == 0 {
		return s.createOne(ctx, kindOnboarding, o.ID, item)
	}
	return s.createLocked(ctx, o, item)
}

// NodeChoice picks the node an onboarding opens on. It gets the site's
// node for the onboarding's host name (found false when there is none
// yet) and returns the node record as the onboarding leaves it, or an
// error that stops the create.
type NodeChoice func(cur domain.Node, found bool) (domain.Node, error)

// CreateOnboardingOnNode is CreateOnboarding with the onboarding's node
// written in the same transaction, so neither exists without the other's
// link. choose picks the node: a new one (no version) is created with its
// (site, hostname) claim; an existing one is written at its next version,
// on condition that it has not changed since it was read. When it has (a
// concurrent request created or updated it), the node is read and chosen
// again. A new node chosen where the host's node is removed takes over the
// host's claim from it (successorWrites). The onboarding's NodeID is the
// chosen node's. It returns both records as stored.
func (s *Store) CreateOnboardingOnNode(ctx context.Context, o domain.Onboarding, choose NodeChoice) (domain.Onboarding, domain.Node, error) {
	if err := checkOnboarding(o); err != nil {
		return domain.Onboarding{}, domain.Node{}, err
	}
	now := s.now()
	stampOnboarding(now, &o)
	for range updateAttempts {
		cur, found, err := s.FindNodeByHost(ctx, o.SiteID, o.Hostname)
		if err != nil {
			return domain.Onboarding{}, domain.Node{}, err
		}
		n, err := choose(cur, found)
		if err != nil {
			return domain.Onboarding{}, domain.Node{}, err
		}
		n, nodeWrites, err := s.nodeWrites(now, o, cur, found, n)
		if err != nil {
			return domain.Onboarding{}, domain.Node{}, err
		}
		o.NodeID = n.ID
		item, err := onboardingItem(o)
		if err != nil {
			return domain.Onboarding{}, domain.Node{}, err
		}
		err = s.createLocked(ctx, o, item, nodeWrites...)
		if errors.Is(err, errNodeChanged) {
			continue
		}
		if err != nil {
			return domain.Onboarding{}, domain.Node{}, err
		}
		return o, n, nil
	}
	return domain.Onboarding{}, domain.Node{}, &ItemConflictError{Kind: kindNode, ID: o.SiteID + "/" + o.Hostname, Reason: "changed concurrently, gave up"}
}

// errNodeChanged is the node of CreateOnboardingOnNode failing its
// condition: it was created or updated since it was read.
var errNodeChanged = errors.New("node changed since read")

// nodeWrites checks the node an onboarding opens on and returns it as it
// will be stored with the writes that store it.
func (s *Store) nodeWrites(now time.Time, o domain.Onboarding, cur domain.Node, found bool, n domain.Node) (domain.Node, []types.TransactWriteItem, error) {
	if err := checkNode(n); err != nil {
		return domain.Node{}, nil, err
	}
	if nodeHostKey(n.SiteID, n.Hostname) != nodeHostKey(o.SiteID, o.Hostname) {
		return domain.Node{}, nil, fmt.Errorf("create onboarding %s: node %s is %s on site %s, not the onboarding's host", o.ID, n.ID, n.Hostname, n.SiteID)
	}
	if !found {
		n, item, host, err := s.newNodeItems(now, n)
		if err != nil {
			return domain.Node{}, nil, err
		}
		return n, []types.TransactWriteItem{s.putIfAbsent(item), s.putIfAbsent(host)}, nil
	}
	if n.ID != cur.ID {
		return s.successorWrites(now, o, cur, n)
	}
	n.CreatedAt, n.Version, n.UpdatedAt = cur.CreatedAt, cur.Version+1, now
	item, err := nodeItem(n)
	if err != nil {
		return domain.Node{}, nil, err
	}
	return n, []types.TransactWriteItem{s.putIfVersion(item, cur.Version)}, nil
}

// successorWrites stores n as a new node identity for a host name whose
// node cur is removed: a removed node is terminal, so a returning host is a
// new node. The old node stays as it is (removed, its tokens revoked); the
// (site, hostname) claim moves to the new node on condition that it still
// names the old one and the old one has not changed since it was read.
func (s *Store) successorWrites(now time.Time, o domain.Onboarding, cur, n domain.Node) (domain.Node, []types.TransactWriteItem, error) {
	if cur.Status != domain.NodeRemoved {
		return domain.Node{}, nil, fmt.Errorf("create onboarding %s: node %s chosen for %s, which is node %s (%s)", o.ID, n.ID, o.Hostname, cur.ID, cur.Status)
	}
	n, item, host, err := s.newNodeItems(now, n)
	if err != nil {
		return domain.Node{}, nil, err
	}
	unchanged := types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(s.table),
		Key:                       nodeKey(cur.ID).av(),
		ConditionExpression:       aws.String(condVersion),
		ExpressionAttributeNames:  map[string]string{"#version": "version"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":version": num(cur.Version)},
	}}
	return n, []types.TransactWriteItem{s.putIfAbsent(item), s.putLock(host, "node_id", cur.ID), unchanged}, nil
}

// newNodeItems stamps a new node and returns its item and its (site,
// hostname) claim.
func (s *Store) newNodeItems(now time.Time, n domain.Node) (domain.Node, map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
	stamp(now, &n.CreatedAt, &n.UpdatedAt, &n.Version)
	item, err := nodeItem(n)
	if err != nil {
		return n, nil, nil, err
	}
	host, err := s.nodeHostItem(n)
	return n, item, host, err
}

func stampOnboarding(now time.Time, o *domain.Onboarding) {
	stamp(now, &o.CreatedAt, &o.UpdatedAt, &o.Version)
	if o.Status == "" {
		o.Status = domain.OnboardingPending
	}
}

// createLocked writes the onboarding item, its server locks and the given
// writes (the node's) in one transaction; errNodeChanged when one of those
// writes fails its condition.
func (s *Store) createLocked(ctx context.Context, o domain.Onboarding, item map[string]types.AttributeValue, writes ...types.TransactWriteItem) error {
	locks := serverLocks(o)
	tx := []types.TransactWriteItem{s.putIfAbsent(item)}
	for _, l := range locks {
		lock, err := s.lockItem(o, l)
		if err != nil {
			return err
		}
		tx = append(tx, s.putIfAbsent(lock))
	}
	tx = append(tx, writes...)
	for range updateAttempts {
		err := s.write(ctx, tx...)
		codes, _ := txCodes(err)
		if txFailed(codes, 0) {
			return &ItemConflictError{Kind: kindOnboarding, ID: o.ID, Reason: "already exists"}
		}
		if i := firstFailed(codes, 1); i > 0 && i <= len(locks) {
			if err := s.lockHeld(ctx, o, locks[i-1]); !errors.Is(err, errVersionConflict) {
				return err
			}
			continue // released between the write and the read: try again
		}
		if i := firstFailed(codes, 1+len(locks)); i > 0 && i <= len(locks)+len(writes) {
			return errNodeChanged
		}
		switch {
		case txContended(codes):
			continue
		case err != nil:
			return fmt.Errorf("create onboarding %s: %w", o.ID, err)
		}
		// Its creator may update it next: no read back.
		s.recent.put(onboardingKey(o.ID), item)
		return nil
	}
	return &ItemConflictError{Kind: kindOnboarding, ID: o.ID, Reason: "host lock contended, gave up"}
}

// firstFailed is the index of the first item from index from on that
// failed its condition, or -1.
func firstFailed(codes []string, from int) int {
	for i := from; i < len(codes); i++ {
		if txFailed(codes, i) {
			return i
		}
	}
	return -1
}

// FindOpenOnboarding returns the id of the open onboarding that holds
// (site, hostname); found is false when the host is free.
func (s *Store) FindOpenOnboarding(ctx context.Context, siteID, hostname string) (id string, found bool, err error) {
	return s.FindServerLock(ctx, siteID, LockHostname, hostname)
}

// FindServerLock returns the id of the open onboarding that holds one
// identity of a server on the site (LockHostname, LockBMC, LockPXEMAC,
// LockMachine); found is false when none does.
func (s *Store) FindServerLock(ctx context.Context, siteID, identity, value string) (id string, found bool, err error) {
	l := serverLock{identity, value}
	switch identity {
	case LockHostname:
		l.value = hostKey(value)
	case LockBMC:
		l.value = canonicalIP(value)
	case LockPXEMAC:
		l.value = strings.ToLower(value)
	}
	var lock openLock
	err = s.get(ctx, "open onboarding", value, l.key(siteID), &lock)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return lock.OnboardingID, true, nil
}

// GetOnboarding returns the onboarding: ItemNotFoundError when there is none.
func (s *Store) GetOnboarding(ctx context.Context, id string) (domain.Onboarding, error) {
	var o domain.Onboarding
	err := s.get(ctx, kindOnboarding, id, onboardingKey(id), &o)
	return o, err
}

// UpdateOnboarding applies mutate under the record's version. The server
// locks follow the record in the same transaction: a move from open to
// closed releases them all, closed to open takes them again, and an open
// onboarding that learns its PXE MAC or MAAS machine takes that lock too
// (OpenOnboardingExistsError when another open onboarding holds one). A
// move into failed, cancelled or manual_intervention also revokes the
// run's unconsumed enrollment token in that transaction (CloseOnboarding).
// The id and CreatedAt cannot change. ItemNotFoundError when there is no
// such onboarding; ItemConflictError after repeated concurrent updates.
func (s *Store) UpdateOnboarding(ctx context.Context, id string, mutate Mutator[domain.Onboarding]) (domain.Onboarding, error) {
	return updateLoop(ctx, s, kindOnboarding, id, onboardingKey(id), mutate, s.bumpOnboarding, s.writeOnboarding)
}

// bumpOnboarding keeps what an update may not change and bumps the version.
func (s *Store) bumpOnboarding(prev, next *domain.Onboarding) {
	next.ID, next.CreatedAt = prev.ID, prev.CreatedAt
	next.Version = prev.Version + 1
	next.UpdatedAt = s.now()
}

// CloseOnboarding is UpdateOnboarding for an operation that ends a run or
// stops it for an operator (cancel, a workflow's failure or manual
// intervention, an interrupted run, the recovery operations): mutate must
// leave the onboarding failed, cancelled or manual_intervention, else
// InvalidRecordError and nothing is written. In one transaction the status
// changes, the server locks are released (kept for manual_intervention)
// and the run's enrollment token is revoked unless a node already consumed
// it, so a node enrolling afterwards is refused (TokenWorkflowClosed).
func (s *Store) CloseOnboarding(ctx context.Context, id string, mutate Mutator[domain.Onboarding]) (domain.Onboarding, error) {
	return s.UpdateOnboarding(ctx, id, func(o *domain.Onboarding) error {
		if err := mutate(o); err != nil {
			return err
		}
		if !revokesToken(o.Status) {
			return &InvalidRecordError{Kind: kindOnboarding, Field: "status", Reason: "must be failed, cancelled or manual_intervention to close"}
		}
		return nil
	})
}

// revokesToken reports whether moving into status ends the run's right to
// enroll a node: every stop but completion.
func revokesToken(status domain.OnboardingStatus) bool {
	switch status {
	case domain.OnboardingFailed, domain.OnboardingCancelled, domain.OnboardingManualIntervention:
		return true
	}
	return false
}

func (s *Store) writeOnboarding(ctx context.Context, prev, next *domain.Onboarding) error {
	return s.writeOnboardingWith(ctx, prev, next, nil)
}

// writeOnboardingWith writes next over prev together with rows, the
// timeline rows the change records (UpdateOnboardingWithTimeline).
func (s *Store) writeOnboardingWith(ctx context.Context, prev, next *domain.Onboarding, rows []domain.TimelineEntry) error {
	if err := checkOnboarding(*next); err != nil {
		return err
	}
	slot := slotToRelease(*prev, next) // the site throttle's slot (throttle.go)
	item, err := onboardingItem(*next)
	if err != nil {
		return err
	}
	release, take := lockDiff(*prev, *next)
	var revoke types.TransactWriteItem
	revoking := false
	if next.Status != prev.Status && revokesToken(next.Status) && next.EnrollmentTokenHash != "" {
		if revoke, revoking, err = s.revokeForClose(ctx, next.EnrollmentTokenHash); err != nil {
			return err
		}
	}
	var owed []types.TransactWriteItem // the outbox row of a terminal status (outbox.go)
	if owesEvent(prev.Status, next.Status) {
		row, err := s.outboxPut(next)
		if err != nil {
			return err
		}
		owed = append(owed, row)
	}
	if next.Status != prev.Status && needsOperator(next.Status) {
		// An outcome an operator must act on is on the audit trail, in the
		// same transaction as the status that records it.
		row, err := s.systemAuditPut(next)
		if err != nil {
			return err
		}
		owed = append(owed, row)
	}
	if len(release) == 0 && len(take) == 0 && !revoking && len(owed) == 0 && slot == (slotRelease{}) && len(rows) == 0 {
		if err := s.putVersioned(ctx, kindOnboarding, next.ID, item, prev.Version); err != nil {
			return err
		}
		// The activity that wrote it often updates it again: that update
		// starts from what was written instead of reading it back.
		s.recent.put(onboardingKey(next.ID), item)
		return nil
	}

	// A release finds the lock held by this onboarding or by nobody; the
	// delete is dropped only if a repair left it with another onboarding,
	// which must keep it.
	for tries := 0; ; tries++ {
		tx := []types.TransactWriteItem{s.putIfVersion(item, prev.Version)}
		for _, l := range release {
			tx = append(tx, s.deleteLock(l.key(prev.SiteID), "onboarding_id", next.ID))
		}
		takeAt := len(tx)
		for _, l := range take {
			lock, err := s.lockItem(*next, l)
			if err != nil {
				return err
			}
			tx = append(tx, s.putLock(lock, "onboarding_id", next.ID))
		}
		revokeAt := -1
		if revoking {
			revokeAt = len(tx)
			tx = append(tx, revoke)
		}
		tx = append(tx, owed...) // unconditional: never a failed code
		slotAt := len(tx)
		slotItems, holderAt, err := s.releaseItems(ctx, prev.SiteID, next.ID, slot)
		if err != nil {
			return err
		}
		tx = append(tx, slotItems...)
		rowsAt := len(tx)
		tx = append(tx, s.timelineItems(rows)...)
		err = s.write(ctx, tx...)
		codes, _ := txCodes(err)
		i := firstFailed(codes, 1)
		switch {
		case txFailed(codes, 0) || txContended(codes) || (i >= rowsAt && len(rows) > 0):
			// A row's sort key taken (new suffixes on the next attempt)
			// is retried like a lost version race.
			return errVersionConflict
		case i >= slotAt && tries < updateAttempts:
			// The holder row was freed as dead meanwhile (nothing to give
			// back), or the site's count moved (read it again).
			if holderAt >= 0 && i == slotAt+holderAt {
				gone, gerr := s.holderGone(ctx, prev.SiteID, next.ID, slot.attempt)
				if gerr != nil {
					return gerr
				}
				slot.holder = slot.holder && !gone
			}
			continue
		case i >= slotAt:
			return errVersionConflict
		case i > 0 && i < takeAt:
			release = append(release[:i-1:i-1], release[i:]...)
			continue
		case i >= takeAt && i != revokeAt:
			return s.lockHeld(ctx, *next, take[i-takeAt])
		case i == revokeAt && i > 0:
			// A node consumed the token meanwhile: read everything again.
			return errVersionConflict
		case err != nil:
			return fmt.Errorf("update onboarding %s: %w", next.ID, err)
		}
		s.recent.put(onboardingKey(next.ID), item)
		return nil
	}
}

// onboardingIndex is the index, and the partition in it, a filter reads.
type onboardingIndex struct {
	name, pkAttr, skAttr, pk string
}

// indexFor picks the most selective index the filter allows: a hostname has
// few onboardings, a site more, a status the most.
func indexFor(f OnboardingFilter) onboardingIndex {
	switch {
	case f.Hostname != "":
		return onboardingIndex{IndexGSI4, AttrGSI4PK, AttrGSI4SK, gsiOnbHost + hostKey(f.Hostname)}
	case f.SiteID != "":
		return onboardingIndex{IndexGSI3, AttrGSI3PK, AttrGSI3SK, gsiOnbSite + f.SiteID}
	case f.Status != "":
		return onboardingIndex{IndexGSI2, AttrGSI2PK, AttrGSI2SK, gsiOnbStatus + string(f.Status)}
	default:
		return onboardingIndex{IndexGSI1, AttrGSI1PK, AttrGSI1SK, gsiAllOnboardings}
	}
}

// matches applies the filters the index did not.
func (f OnboardingFilter) matches(o domain.Onboarding) bool {
	return (f.Status == "" || o.Status == f.Status) &&
		(f.SiteID == "" || o.SiteID == f.SiteID) &&
		(f.Hostname == "" || hostKey(o.Hostname) == hostKey(f.Hostname))
}

// mayMatch applies the filters to the stored attributes before the item
// is decoded; matches stays the judge.
func (f OnboardingFilter) mayMatch(item map[string]types.AttributeValue) bool {
	attr := func(name string) string {
		v, _ := item[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	return (f.Status == "" || attr("status") == string(f.Status)) &&
		(f.SiteID == "" || attr("site_id") == f.SiteID)
}

// filtered reports whether some filter is applied after the Query.
func (f OnboardingFilter) filtered() bool {
	n := 0
	for _, v := range []string{string(f.Status), f.SiteID, f.Hostname} {
		if v != "" {
			n++
		}
	}
	return n > 1
}

// ListOnboardings returns one page of onboardings, newest first. The
// remaining filters are applied to the rows the index returns, in the
// store rather than as a FilterExpression: DynamoDB charges the same reads
// either way, and Limit then counts exactly what the page needs. A page can
// be short (even empty) with a NextCursor when filters discard many rows;
// an empty NextCursor means the listing is complete. InvalidCursorError
// when Cursor is not a NextCursor of the same filter.
func (s *Store) ListOnboardings(ctx context.Context, f OnboardingFilter) (OnboardingPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultPageSize
	}
	limit = min(limit, MaxPageSize)
	ix := indexFor(f)
	var start map[string]types.AttributeValue
	if f.Cursor != "" {
		var err error
		if start, err = decodeCursor(f.Cursor, ix); err != nil {
			return OnboardingPage{}, err
		}
	}

	// One row beyond the page tells whether another page exists; with
	// filters, read ahead more so that most pages take one Query.
	pageSize := limit + 1
	if f.filtered() {
		pageSize = min(4*(limit+1), 1000)
	}
	page := OnboardingPage{Items: []domain.Onboarding{}}
	var lastIncluded map[string]types.AttributeValue
	for round := 1; ; round++ {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(ix.name),
			KeyConditionExpression:    aws.String(exprIndexPartition(ix.pkAttr)),
			ExpressionAttributeNames:  map[string]string{"#" + ix.pkAttr: ix.pkAttr},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(ix.pk)},
			ScanIndexForward:          aws.Bool(false),
			Limit:                     aws.Int32(int32(pageSize)),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return OnboardingPage{}, fmt.Errorf("list onboardings: %w", err)
		}
		for _, item := range out.Items {
			if !f.mayMatch(item) { // most filtered-out rows are never decoded
				continue
			}
			var o domain.Onboarding
			if err := attributevalue.UnmarshalMap(item, &o); err != nil {
				return OnboardingPage{}, fmt.Errorf("decode onboarding: %w", err)
			}
			if !f.matches(o) {
				continue
			}
			if len(page.Items) == limit { // a further row exists: the page is full
				page.NextCursor = encodeCursor(lastIncluded, ix)
				return page, nil
			}
			page.Items = append(page.Items, o)
			lastIncluded = item
		}
		if len(out.LastEvaluatedKey) == 0 {
			return page, nil
		}
		start = out.LastEvaluatedKey
		if round == listRounds {
			page.NextCursor = encodeCursor(start, ix)
			return page, nil
		}
	}
}

// cursor is the JSON inside an opaque page cursor: the index it walks and
// the key of the last row handed out (a Query's ExclusiveStartKey).
type cursor struct {
	Index string            `json:"i"`
	Key   map[string]string `json:"k"`
}

func encodeCursor(item map[string]types.AttributeValue, ix onboardingIndex) string {
	c := cursor{Index: ix.name, Key: map[string]string{}}
	for _, name := range []string{AttrPK, AttrSK, ix.pkAttr, ix.skAttr} {
		if v, ok := item[name].(*types.AttributeValueMemberS); ok {
			c.Key[name] = v.Value
		}
	}
	b, _ := json.Marshal(c) // a struct of strings always encodes
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string, ix onboardingIndex) (map[string]types.AttributeValue, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, &InvalidCursorError{Reason: "not base64url"}
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, &InvalidCursorError{Reason: "malformed"}
	}
	if c.Index != ix.name || c.Key[ix.pkAttr] != ix.pk {
		return nil, &InvalidCursorError{Reason: "belongs to another filter"}
	}
	start := map[string]types.AttributeValue{}
	for _, name := range []string{AttrPK, AttrSK, ix.pkAttr, ix.skAttr} {
		v, ok := c.Key[name]
		if !ok || v == "" {
			return nil, &InvalidCursorError{Reason: "malformed"}
		}
		start[name] = str(v)
	}
	return start, nil
}
