package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

// The site throttle (policy max_concurrent_onboardings). One partition per
// site holds:
//
//   - SLOTS: how many slots are held, with its own version, so every take
//     and every give-back is one conditional write of it;
//   - HOLD#<onboarding id>: one row per slot, naming the attempt holding it;
//   - WAIT#<time>#<onboarding id>: one row per queued onboarding, in the
//     order they queued.
//
// The onboarding record says what it holds (domain.SiteSlot), and every
// write of the record that moves it out of pending/running or to another
// attempt gives the slot and the queue place back in the same transaction
// (writeOnboarding), so no way a workflow ends can forget it. A holder
// whose record does not say so (a workflow that died before its record was
// closed, then closed by hand) is a dead slot: the head of the queue frees
// it when the site is full, and reconciliation reports and frees it.

const (
	pkThrottle      = "THROTTLE#"
	skSlots         = "SLOTS"
	skSlotHolder    = "HOLD#"
	skSlotWaiter    = "WAIT#"
	entitySlots     = "site_slots"
	entityHolder    = "site_slot"
	entityWaiter    = "site_slot_waiter"
	kindSiteSlots   = "site slots"
	condSlotVersion = "#version = :version"
	condHolderOf    = "#attempt = :attempt"
)

func slotsKey(siteID string) key { return key{pkThrottle + siteID, skSlots} }

func holderKey(siteID, onboardingID string) key {
	return key{pkThrottle + siteID, skSlotHolder + onboardingID}
}

// siteSlots is the SLOTS row of a site.
type siteSlots struct {
	SiteID  string `dynamodbav:"site_id"`
	Held    int    `dynamodbav:"held"`
	Version int64  `dynamodbav:"version"`
}

// SlotHolder is one slot of a site's throttle and who holds it.
type SlotHolder struct {
	SiteID       string    `json:"site_id" dynamodbav:"site_id"`
	OnboardingID string    `json:"onboarding_id" dynamodbav:"onboarding_id"`
	Attempt      int       `json:"attempt" dynamodbav:"attempt"`
	Since        time.Time `json:"since" dynamodbav:"since"`
}

// SlotWaiter is one place in a site's throttle queue.
type SlotWaiter struct {
	SiteID       string    `json:"site_id" dynamodbav:"site_id"`
	OnboardingID string    `json:"onboarding_id" dynamodbav:"onboarding_id"`
	Attempt      int       `json:"attempt" dynamodbav:"attempt"`
	Since        time.Time `json:"since" dynamodbav:"since"`
	// Key is the row's sort key (its place in the order).
	Key string `json:"-" dynamodbav:"sk"`
}

// SlotRequest asks for a slot of the onboarding's site for one attempt.
type SlotRequest struct {
	OnboardingID string
	Attempt      int
	// Limit is the site's max_concurrent_onboardings; 0 or less is no
	// limit (the slot is still counted, so a limit set later holds).
	Limit int
	// Fence checks the onboarding as read before anything is written (the
	// attempt still current, the onboarding still open); its error is
	// returned unchanged.
	Fence func(domain.Onboarding) error
}

// SlotResult is what TakeSiteSlot did.
type SlotResult struct {
	// Granted: the attempt holds a slot (taken now or before).
	Granted bool
	// Position is the place in the queue when not granted (1 is next).
	Position int
	// Queued: the onboarding joined the queue in this call.
	Queued bool
	// Held is how many slots of the site were held when it decided.
	Held int
	// Onboarding is the record as written (or read, when nothing changed).
	Onboarding domain.Onboarding
}

// holdsSiteSlot reports whether an onboarding in status s may hold a slot
// or a queue place: while it waits to run or runs.
func holdsSiteSlot(s domain.OnboardingStatus) bool {
	return s == domain.OnboardingPending || s == domain.OnboardingRunning
}

// TakeSiteSlot takes a slot of the onboarding's site for req.Attempt when
// fewer than req.Limit are held and no earlier queued onboarding is owed
// one; otherwise it puts the onboarding in the site's queue (status
// pending, stage queued, once) and returns its place. Taking, queueing and the onboarding's
// record change in one transaction each. A repeated call by the same
// attempt is harmless: a held slot is Granted again, a queued onboarding
// keeps its place. Before queueing behind a full site, the first queued
// onboarding frees dead slots (holders whose onboarding no longer holds
// them). ItemNotFoundError when there is no such onboarding; Fence's
// error; ItemConflictError after repeated concurrent changes.
func (s *Store) TakeSiteSlot(ctx context.Context, req SlotRequest) (SlotResult, error) {
	for range 4 * updateAttempts {
		res, err := s.tryTakeSiteSlot(ctx, req)
		if errors.Is(err, errVersionConflict) {
			continue
		}
		return res, err
	}
	return SlotResult{}, &ItemConflictError{Kind: kindSiteSlots, ID: req.OnboardingID, Reason: "site slots contended, gave up"}
}

func (s *Store) tryTakeSiteSlot(ctx context.Context, req SlotRequest) (SlotResult, error) {
	o, err := s.GetOnboarding(ctx, req.OnboardingID)
	if err != nil {
		return SlotResult{}, err
	}
	if req.Fence != nil {
		if err := req.Fence(o); err != nil {
			return SlotResult{}, err
		}
	}
	if !holdsSiteSlot(o.Status) || o.Attempt != req.Attempt {
		return SlotResult{}, &InvalidRecordError{Kind: kindOnboarding, Field: "status",
			Reason: fmt.Sprintf("%s attempt %d cannot take a site slot for attempt %d", o.Status, o.Attempt, req.Attempt)}
	}
	slots, err := s.readSiteSlots(ctx, o.SiteID)
	if err != nil {
		return SlotResult{}, err
	}
	res := SlotResult{Held: slots.Held, Onboarding: o}
	if o.Slot != nil && o.Slot.Attempt == req.Attempt && o.Slot.Held {
		res.Granted = true
		return res, nil
	}
	waiters, err := s.ListSlotWaiters(ctx, o.SiteID)
	if err != nil {
		return SlotResult{}, err
	}
	ahead := len(waiters)
	if w := o.Slot; w != nil && w.Attempt == req.Attempt && w.WaitKey != "" {
		ahead = slices.IndexFunc(waiters, func(x SlotWaiter) bool { return x.Key == w.WaitKey })
		if ahead < 0 { // the row is gone (freed as dead): queue again
			ahead = len(waiters)
		}
	}
	free := req.Limit - slots.Held
	if req.Limit <= 0 {
		free = ahead + 1
	}
	if ahead < free {
		return s.grantSiteSlot(ctx, o, req.Attempt, slots, res)
	}
	if ahead == max(free, 0) {
		// This onboarding is the first one not served: free the dead slots
		// and the dead places ahead of it, if any, and decide again.
		changed, err := s.freeDead(ctx, o.SiteID, ahead)
		if err != nil {
			return SlotResult{}, err
		}
		if changed {
			return SlotResult{}, errVersionConflict
		}
	}
	res.Position = ahead + 1
	if o.Slot != nil && o.Slot.Attempt == req.Attempt && o.Slot.WaitKey != "" && ahead < len(waiters) {
		return res, nil // already queued: keep the place
	}
	return s.queueForSiteSlot(ctx, o, req.Attempt, res)
}

// grantSiteSlot takes a slot: the record says it holds it, the holder row
// is written, the count goes up on condition it did not move, and the
// queue row (if any) goes.
func (s *Store) grantSiteSlot(ctx context.Context, o domain.Onboarding, attempt int, slots siteSlots, res SlotResult) (SlotResult, error) {
	prev := o
	next := o
	next.Slot = &domain.SiteSlot{Attempt: attempt, Held: true}
	next.Version = prev.Version + 1
	next.UpdatedAt = s.now()
	item, err := onboardingItem(next)
	if err != nil {
		return SlotResult{}, err
	}
	holder, err := marshalItem(SlotHolder{SiteID: o.SiteID, OnboardingID: o.ID, Attempt: attempt, Since: s.now()},
		holderKey(o.SiteID, o.ID), entityHolder, nil)
	if err != nil {
		return SlotResult{}, err
	}
	count, err := s.slotsPut(o.SiteID, slots, slots.Held+1)
	if err != nil {
		return SlotResult{}, err
	}
	tx := []types.TransactWriteItem{s.putIfVersion(item, prev.Version), count, s.putIfAbsent(holder)}
	if w := prev.Slot; w != nil && w.WaitKey != "" {
		tx = append(tx, s.deleteItem(key{pkThrottle + o.SiteID, w.WaitKey}))
	}
	err = s.write(ctx, tx...)
	codes, _ := txCodes(err)
	switch {
	case txFailed(codes, 2):
		// A holder row of this onboarding is left over: it is dead (the
		// record says it holds nothing for this attempt). Free it first.
		if _, ferr := s.freeDead(ctx, o.SiteID, 0); ferr != nil {
			return SlotResult{}, ferr
		}
		return SlotResult{}, errVersionConflict
	case len(codes) > 0:
		return SlotResult{}, errVersionConflict
	case err != nil:
		return SlotResult{}, fmt.Errorf("take site slot for onboarding %s: %w", o.ID, err)
	}
	s.recent.take(onboardingKey(o.ID)) // the cached read is stale now
	res.Granted, res.Position, res.Held, res.Onboarding = true, 0, slots.Held+1, next
	return res, nil
}

// queueForSiteSlot puts the onboarding at the end of its site's queue and
// in stage queued.
func (s *Store) queueForSiteSlot(ctx context.Context, o domain.Onboarding, attempt int, res SlotResult) (SlotResult, error) {
	now := s.now()
	wk := skSlotWaiter + timeKey(now) + "#" + o.ID
	prev := o
	next := o
	next.Slot = &domain.SiteSlot{Attempt: attempt, WaitKey: wk}
	// A run an operator reopened as running at a later stage waits like a
	// new one: pending, queued (its execution input keeps the stage).
	next.Status, next.Stage = domain.OnboardingPending, domain.StageQueued
	next.Version = prev.Version + 1
	next.UpdatedAt = now
	item, err := onboardingItem(next)
	if err != nil {
		return SlotResult{}, err
	}
	waiter, err := marshalItem(SlotWaiter{SiteID: o.SiteID, OnboardingID: o.ID, Attempt: attempt, Since: now},
		key{pkThrottle + o.SiteID, wk}, entityWaiter, nil)
	if err != nil {
		return SlotResult{}, err
	}
	tx := []types.TransactWriteItem{s.putIfVersion(item, prev.Version), s.putIfAbsent(waiter)}
	if w := prev.Slot; w != nil && w.WaitKey != "" && w.WaitKey != wk {
		tx = append(tx, s.deleteItem(key{pkThrottle + o.SiteID, w.WaitKey}))
	}
	err = s.write(ctx, tx...)
	if codes, _ := txCodes(err); len(codes) > 0 {
		return SlotResult{}, errVersionConflict
	}
	if err != nil {
		return SlotResult{}, fmt.Errorf("queue onboarding %s for a site slot: %w", o.ID, err)
	}
	s.recent.take(onboardingKey(o.ID)) // the cached read is stale now
	res.Queued, res.Onboarding = true, next
	return res, nil
}

func (s *Store) readSiteSlots(ctx context.Context, siteID string) (siteSlots, error) {
	var slots siteSlots
	err := s.get(ctx, kindSiteSlots, siteID, slotsKey(siteID), &slots)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return siteSlots{SiteID: siteID}, nil
	}
	return slots, err
}

// slotsPut writes the site's count as held, on condition that it is still
// the one read (absent when it never existed).
func (s *Store) slotsPut(siteID string, read siteSlots, held int) (types.TransactWriteItem, error) {
	item, err := marshalItem(siteSlots{SiteID: siteID, Held: max(held, 0), Version: read.Version + 1}, slotsKey(siteID), entitySlots, nil)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	if read.Version == 0 {
		return s.putIfAbsent(item), nil
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String(condSlotVersion),
		ExpressionAttributeNames:  map[string]string{"#version": "version"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":version": num(read.Version)},
	}}, nil
}

func (s *Store) deleteItem(k key) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: k.av()}}
}

// deleteHolder deletes a holder row on condition that the attempt holds it.
func (s *Store) deleteHolder(siteID, onboardingID string, attempt int) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName:                 aws.String(s.table),
		Key:                       holderKey(siteID, onboardingID).av(),
		ConditionExpression:       aws.String(condHolderOf),
		ExpressionAttributeNames:  map[string]string{"#attempt": "attempt"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":attempt": num(int64(attempt))},
	}}
}

// ListSlotHolders returns the slots of a site and who holds them (one
// Query of the site's throttle partition).
func (s *Store) ListSlotHolders(ctx context.Context, siteID string) ([]SlotHolder, error) {
	return queryPrefix[SlotHolder](ctx, s, entityHolder, pkThrottle+siteID, skSlotHolder)
}

// ListSlotWaiters returns a site's throttle queue, first in line first.
func (s *Store) ListSlotWaiters(ctx context.Context, siteID string) ([]SlotWaiter, error) {
	return queryPrefix[SlotWaiter](ctx, s, entityWaiter, pkThrottle+siteID, skSlotWaiter)
}

// SiteSlotsHeld returns how many slots of the site its count says are held.
func (s *Store) SiteSlotsHeld(ctx context.Context, siteID string) (int, error) {
	slots, err := s.readSiteSlots(ctx, siteID)
	return slots.Held, err
}

// QueuePosition returns the onboarding's place in its site's throttle
// queue (1 is next), or 0 when it is not queued.
func (s *Store) QueuePosition(ctx context.Context, o domain.Onboarding) (int, error) {
	if o.Slot == nil || o.Slot.WaitKey == "" || o.Slot.Attempt != o.Attempt || !holdsSiteSlot(o.Status) {
		return 0, nil
	}
	waiters, err := s.ListSlotWaiters(ctx, o.SiteID)
	if err != nil {
		return 0, err
	}
	for i, w := range waiters {
		if w.Key == o.Slot.WaitKey {
			return i + 1, nil
		}
	}
	return 0, nil
}

// DeadSlots is what of a site's throttle no workflow holds: holder and
// queue rows whose onboarding is gone, closed, on another attempt or does
// not say it holds them, and the count when it disagrees with the holder
// rows that remain (Held is the count, Holders the live holders).
type DeadSlots struct {
	Holders     []SlotHolder
	Waiters     []SlotWaiter
	CountWrong  bool
	Held, Alive int
	// Why says, per onboarding id of a dead row, why no workflow holds it
	// ("onboarding gone", "onboarding completed", "onboarding on attempt 3").
	Why map[string]string
}

// Empty reports whether nothing is dead.
func (d DeadSlots) Empty() bool { return len(d.Holders) == 0 && len(d.Waiters) == 0 && !d.CountWrong }

// FindDeadSlots reads a site's throttle and the onboardings it names, and
// returns what no workflow holds. It writes nothing.
func (s *Store) FindDeadSlots(ctx context.Context, siteID string) (DeadSlots, error) {
	return s.findDeadSlots(ctx, siteID, -1)
}

// findDeadSlots is FindDeadSlots judging only the first waiters queue
// places (all when waiters < 0).
func (s *Store) findDeadSlots(ctx context.Context, siteID string, waiters int) (DeadSlots, error) {
	var d DeadSlots
	slots, err := s.readSiteSlots(ctx, siteID)
	if err != nil {
		return d, err
	}
	holders, err := s.ListSlotHolders(ctx, siteID)
	if err != nil {
		return d, err
	}
	queue, err := s.ListSlotWaiters(ctx, siteID)
	if err != nil {
		return d, err
	}
	if waiters >= 0 && waiters < len(queue) {
		queue = queue[:waiters]
	}
	d.Why = map[string]string{}
	listed := 0
	for _, h := range holders {
		why, err := s.slotDead(ctx, h.OnboardingID, h.Attempt, func(sl domain.SiteSlot) bool { return sl.Held })
		if err != nil {
			return d, err
		}
		if why != "" {
			// Read the row again: a run that ended between the listing
			// and the record's read gave it back, which is no drift.
			if _, found, err := s.getRaw(ctx, holderKey(siteID, h.OnboardingID)); err != nil || !found {
				if err != nil {
					return d, err
				}
				continue
			}
		}
		listed++
		if why == "" {
			d.Alive++
		} else {
			d.Holders = append(d.Holders, h)
			d.Why[h.OnboardingID] = why
		}
	}
	for _, w := range queue {
		why, err := s.slotDead(ctx, w.OnboardingID, w.Attempt, func(sl domain.SiteSlot) bool { return sl.WaitKey == w.Key })
		if err != nil {
			return d, err
		}
		if why == "" {
			continue
		}
		if _, found, err := s.getRaw(ctx, key{pkThrottle + siteID, w.Key}); err != nil || !found {
			if err != nil {
				return d, err
			}
			continue // taken or given back meanwhile
		}
		d.Waiters = append(d.Waiters, w)
		d.Why[w.OnboardingID] = why
	}
	d.Held = slots.Held
	if slots.Held != listed {
		// Judge the count only if it did not move while the rows were
		// read: a take or a give-back in between is no drift.
		again, err := s.readSiteSlots(ctx, siteID)
		if err != nil {
			return d, err
		}
		d.CountWrong = again.Version == slots.Version
	}
	return d, nil
}

// slotDead says why the onboarding no longer holds what a throttle row
// says it does for attempt, or "" when it does.
func (s *Store) slotDead(ctx context.Context, onboardingID string, attempt int, holds func(domain.SiteSlot) bool) (string, error) {
	o, err := s.GetOnboarding(ctx, onboardingID)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return "onboarding gone", nil
	}
	if err != nil {
		return "", err
	}
	switch {
	case !holdsSiteSlot(o.Status):
		return "onboarding " + string(o.Status), nil
	case o.Attempt != attempt:
		return fmt.Sprintf("onboarding on attempt %d", o.Attempt), nil
	case o.Slot == nil || o.Slot.Attempt != attempt || !holds(*o.Slot):
		return "onboarding does not hold it", nil
	}
	return "", nil
}

// FreeDeadSlots frees what FindDeadSlots reports dead, each row on
// condition that it is still the one judged dead, and sets the count to
// the live holder rows when it disagrees. It returns what it found dead;
// running it again frees nothing more.
func (s *Store) FreeDeadSlots(ctx context.Context, siteID string) (DeadSlots, error) {
	d, err := s.FindDeadSlots(ctx, siteID)
	if err != nil || d.Empty() {
		return d, err
	}
	_, err = s.freeDead(ctx, siteID, -1)
	return d, err
}

// freeDead frees the dead holders of a site with the count in one
// transaction (the count set to the live holders, which also repairs a
// count that disagrees), and the dead queue places among the first
// waiters (all when waiters < 0). changed reports whether it wrote.
func (s *Store) freeDead(ctx context.Context, siteID string, waiters int) (changed bool, err error) {
	for range updateAttempts {
		// Read in this order (count, then rows): a take or give-back after
		// the count was read moves its version, and the write fails.
		slots, err := s.readSiteSlots(ctx, siteID)
		if err != nil {
			return changed, err
		}
		d, err := s.findDeadSlots(ctx, siteID, waiters)
		if err != nil {
			return changed, err
		}
		if d.Empty() {
			return changed, nil
		}
		var tx []types.TransactWriteItem
		for _, w := range d.Waiters {
			tx = append(tx, s.deleteItem(key{pkThrottle + siteID, w.Key}))
		}
		for _, h := range d.Holders {
			tx = append(tx, s.deleteHolder(siteID, h.OnboardingID, h.Attempt))
		}
		if len(d.Holders) > 0 || d.CountWrong {
			count, err := s.slotsPut(siteID, slots, d.Alive)
			if err != nil {
				return changed, err
			}
			tx = append(tx, count)
		}
		err = s.write(ctx, tx...)
		if codes, ok := txCodes(err); ok && len(codes) > 0 {
			continue // something moved: judge again
		}
		if err != nil {
			return changed, fmt.Errorf("free dead slots of site %s: %w", siteID, err)
		}
		changed = true
	}
	return changed, nil
}

// slotRelease is what a write of an onboarding gives back of its site's
// throttle: nothing when it keeps holding what it holds.
type slotRelease struct {
	holder  bool
	waitKey string
	attempt int
}

// slotToRelease decides what an onboarding moving from prev to next gives
// back: everything once it leaves pending/running or its attempt changes.
// It clears next.Slot accordingly.
func slotToRelease(prev domain.Onboarding, next *domain.Onboarding) slotRelease {
	sl := prev.Slot
	if sl == nil {
		return slotRelease{}
	}
	if holdsSiteSlot(next.Status) && next.Attempt == sl.Attempt {
		return slotRelease{}
	}
	next.Slot = nil
	return slotRelease{holder: sl.Held, waitKey: sl.WaitKey, attempt: sl.Attempt}
}

// releaseItems are the writes that give a slot back, in the transaction
// that writes the onboarding: the holder row (on condition this attempt
// holds it) and the count one lower, and the queue row. holderAt is the
// index of the holder's delete in the returned list (-1 when none), so a
// caller can tell a holder freed meanwhile (dropped: nothing to give back)
// from a count that moved (read again).
func (s *Store) releaseItems(ctx context.Context, siteID, onboardingID string, r slotRelease) (items []types.TransactWriteItem, holderAt int, err error) {
	holderAt = -1
	if r.waitKey != "" {
		items = append(items, s.deleteItem(key{pkThrottle + siteID, r.waitKey}))
	}
	if r.holder {
		slots, err := s.readSiteSlots(ctx, siteID)
		if err != nil {
			return nil, -1, err
		}
		count, err := s.slotsPut(siteID, slots, slots.Held-1)
		if err != nil {
			return nil, -1, err
		}
		holderAt = len(items)
		items = append(items, s.deleteHolder(siteID, onboardingID, r.attempt), count)
	}
	return items, holderAt, nil
}

// holderGone reports whether the holder row a release expected is gone
// (freed as dead meanwhile): the onboarding then has nothing to give back.
func (s *Store) holderGone(ctx context.Context, siteID, onboardingID string, attempt int) (bool, error) {
	var h SlotHolder
	err := s.get(ctx, entityHolder, onboardingID, holderKey(siteID, onboardingID), &h)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return h.Attempt != attempt, nil
}
