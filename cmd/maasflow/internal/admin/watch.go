package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/maasflow/maasflow/client"
	"github.com/maasflow/maasflow/shared/domain"
)

// Watching follows an onboarding's timeline, not only its latest record:
// polls are seconds apart and stages can be shorter, so comparing records
// would miss stages, the classified deploy retry and MAAS's own events.
// Each poll reads GET …/onboardings/{id} and prints the timeline entries
// not printed yet (MAAS events are copied onto the timeline after the fact,
// so entries are told apart by content, not position), then any change of
// the record itself (status, attempt, MAAS system id).

// adminWatchEvent is one line of a watch: a timeline entry, or a change of
// the record (kind "status"). -o json prints it as one JSON line.
type adminWatchEvent struct {
	OnboardingID string              `json:"onboarding_id"`
	Hostname     string              `json:"hostname"`
	Time         time.Time           `json:"time"`
	Attempt      int                 `json:"attempt"`
	Kind         domain.TimelineKind `json:"kind"`
	Stage        string              `json:"stage,omitempty"`
	Outcome      string              `json:"outcome,omitempty"`
	Detail       string              `json:"detail,omitempty"`
	Source       string              `json:"source,omitempty"`
	MAASEventID  int64               `json:"maas_event_id,omitempty"`
	// Set on kind "status" only.
	Status       string `json:"status,omitempty"`
	MAASSystemID string `json:"maas_system_id,omitempty"`
	// Set on kind "queue" only: the place in the site's throttle queue.
	QueuePosition int `json:"queue_position,omitempty"`
}

// adminWatchStatus is the kind of a record change.
const adminWatchStatus domain.TimelineKind = "status"

// adminWatchQueue is the kind of a move in the site's throttle queue: the
// queue moves without timeline rows, so the watch reports each new place.
const adminWatchQueue domain.TimelineKind = "queue"

// adminFollower turns successive reads of one onboarding into the events
// not reported yet.
type adminFollower struct {
	id       string
	seen     map[adminTimelineEntry]bool
	last     *domain.Onboarding
	maasStat string // the MAAS status the latest MAAS event names
	place    int    // the queue place last reported
}

func newFollower(id string) *adminFollower {
	return &adminFollower{id: id, seen: map[adminTimelineEntry]bool{}}
}

// poll reads the onboarding and returns what is new since the last poll.
func (f *adminFollower) poll(ctx context.Context, c *adminClient) (adminOnboardingDetail, []adminWatchEvent, error) {
	d, err := f.read(ctx, c)
	if err != nil {
		return d, nil, err
	}
	return d, f.next(d), nil
}

// read reads the onboarding.
func (f *adminFollower) read(ctx context.Context, c *adminClient) (adminOnboardingDetail, error) {
	resp, err := c.do(ctx, http.MethodGet, adminPath(adminOnboardingsPath, f.id), nil, nil)
	if err != nil {
		return adminOnboardingDetail{}, err
	}
	var d adminOnboardingDetail
	err = resp.decode(&d)
	return d, err
}

// next compares a read (a poll, or a state the stream pushed) with the
// previous ones.
func (f *adminFollower) next(d adminOnboardingDetail) []adminWatchEvent {
	var evs []adminWatchEvent
	o := d.Onboarding
	first := f.last == nil
	if f.last == nil || f.last.Status != o.Status || f.last.Attempt != o.Attempt || f.last.MAASSystemID != o.MAASSystemID {
		at := o.UpdatedAt
		if at.IsZero() {
			at = o.CreatedAt
		}
		evs = append(evs, adminWatchEvent{Time: at, Attempt: o.Attempt, Kind: adminWatchStatus, Stage: string(o.Stage),
			Status: string(o.Status), MAASSystemID: o.MAASSystemID})
	}
	f.last = &o
	var queue []adminWatchEvent
	if o.QueuePosition > 0 && o.QueuePosition != f.place {
		queue = append(queue, adminWatchEvent{Time: o.UpdatedAt, Attempt: o.Attempt, Kind: adminWatchQueue, Stage: string(o.Stage),
			QueuePosition: o.QueuePosition})
	}
	f.place = o.QueuePosition
	for _, e := range d.Timeline {
		// The diagnostics' bodies are not on the timeline; its marker is.
		if f.seen[e] {
			continue
		}
		f.seen[e] = true
		if e.Kind == domain.TimelineMAASEvent {
			if st := maasStatusOf(e.Detail); st != "" {
				f.maasStat = st
			}
		}
		evs = append(evs, adminWatchEvent{Time: e.Time, Attempt: e.Attempt, Kind: e.Kind, Stage: e.Stage, Outcome: e.Outcome,
			Detail: e.Detail, Source: e.Source, MAASEventID: e.MAASEventID})
	}
	evs = append(evs, queue...) // the place after the row that queued it
	// A status change belongs after the timeline rows that led to it, and
	// the first read's state after the backlog it joins: history first,
	// then where the run is now.
	if _, ended := adminOutcome(string(o.Status)); (ended || first) && len(evs) > 1 && evs[0].Kind == adminWatchStatus {
		evs = append(evs[1:], evs[0])
	}
	for i := range evs {
		evs[i].OnboardingID, evs[i].Hostname = o.ID, o.Hostname
	}
	return evs
}

// maasStatuses are the MAAS event types that name the status a machine
// enters (docs/maas-behaviour.md §11: MAAS logs a status change as an event
// whose type is the new status).
var maasStatuses = []string{
	"Commissioning", "Ready", "Failed commissioning", "Failed testing", "Deploying", "Deployed",
	"Failed deployment", "Releasing", "Released", "Disk erasing", "Disks erased", "Rescue mode", "Exited rescue mode",
	"Marking node failed",
}

// maasStatusOf reads "LEVEL: Type - description" and returns the status the
// event's type names, or "".
func maasStatusOf(detail string) string {
	_, typ, ok := strings.Cut(detail, ": ")
	if !ok {
		typ = detail
	}
	typ, _, _ = strings.Cut(typ, " - ")
	for _, s := range maasStatuses {
		if typ == s {
			switch s {
			case "Disks erased", "Released":
				return "Ready"
			case "Exited rescue mode":
				return ""
			case "Marking node failed":
				return "Failed"
			}
			return s
		}
	}
	return ""
}

// watch follows one onboarding until it ends, printing each new event,
// and returns nil for completed, else an exit code error: 3 for
// manual_intervention, 4 for failed or cancelled.
func (r *adminRun) watch(ctx context.Context, c *adminClient, id string, interval time.Duration) error {
	return r.follow(ctx, c, newFollower(id), interval)
}

// follow is watch with a follower that may have seen part of the timeline
// already (a recovery operation's --wait prints only the new run).
func (r *adminRun) follow(ctx context.Context, c *adminClient, f *adminFollower, interval time.Duration) error {
	return followStream(ctx, r, c, adminPath(adminOnboardingsPath, f.id)+client.StreamSuffix, interval,
		func(d adminOnboardingDetail) (bool, error) {
			for _, e := range f.next(d) {
				r.printWatchEvent(e, false)
			}
			code, done := adminOutcome(string(d.Status))
			if done {
				r.printOutcome(d.Onboarding)
			}
			return done, exitCodeError(code, done)
		},
		func() (adminOnboardingDetail, error) { return f.read(ctx, c) })
}

// exitCodeError is the error that ends a finished watch with code: nil
// for success.
func exitCodeError(code int, done bool) error {
	if !done || code == adminExitOK {
		return nil
	}
	return &ExitCodeError{Code: code}
}

// printWatchEvent prints one event: a JSON line (-o json), a YAML document
// (-o yaml) or a line for people, prefixed with the host name in a batch.
func (r *adminRun) printWatchEvent(e adminWatchEvent, withHost bool) {
	r.printEvent(e, watchLine(e, withHost))
}

// watchLine is the human form of an event:
//
//	2026-03-02T10:00:04Z  gpu-node-01  ▶ enter     commission        from discover
func watchLine(e adminWatchEvent, withHost bool) string {
	var what, detail string
	switch e.Kind {
	case adminWatchStatus:
		what = "status"
		detail = e.Status
		if e.MAASSystemID != "" {
			detail += "  maas_system_id=" + e.MAASSystemID
		}
	case adminWatchQueue:
		what, detail = "queue", fmt.Sprintf("place %d (waiting for a site slot)", e.QueuePosition)
	case domain.TimelineStageEntered:
		what, detail = "▶ enter", e.Detail
	case domain.TimelineStageExited:
		what = "◀ exit"
		detail = strings.TrimSpace(e.Outcome + ": " + e.Detail)
		detail = strings.TrimSuffix(detail, ":")
	case domain.TimelineMAASEvent:
		what, detail = "MAAS", e.Detail
	case domain.TimelineDiagnostic:
		what, detail = "diag", "captured "+e.Source
	default:
		what = string(e.Kind)
		detail = e.Detail
		if e.Source != "" {
			detail = e.Source + ": " + detail
		}
	}
	var b strings.Builder
	b.WriteString(adminTime(e.Time))
	if withHost {
		fmt.Fprintf(&b, "  %-16s", e.Hostname)
	}
	fmt.Fprintf(&b, "  %-7s  %-16s", what, orDash(e.Stage))
	if e.Attempt > 1 {
		b.WriteString("  attempt=" + strconv.Itoa(e.Attempt))
	}
	if detail != "" {
		b.WriteString("  " + detail)
	}
	return strings.TrimRight(b.String(), " ")
}
