package admin

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/maasflow/maasflow/shared/domain"
)

// adminBatchNode is one node a batch watch follows.
type adminBatchNode struct {
	item   adminBatchItem
	follow *adminFollower
	last   adminOnboardingDetail
	polled bool
	// done is set once the node's final state and timeline were read.
	done bool
}

// watchBatch follows every node of a batch until all have ended. Piped
// (or -o json|yaml) it prints every timeline event as a line; on a
// terminal the same lines scroll above a live table that is redrawn in
// place after each poll.
func (r *adminRun) watchBatch(ctx context.Context, c *adminClient, id string, interval time.Duration) error {
	live := r.env.stdoutTTY && !r.machine()
	nodes := map[string]*adminBatchNode{}
	drawn := 0
	return r.pollLoop(ctx, interval, func() (bool, error) {
		b, err := r.pollBatch(ctx, c, id, nodes)
		if err != nil {
			return false, err
		}
		if live && drawn > 0 {
			// Back to the table's first line, and clear to the end.
			fmt.Fprintf(r.env.stdout, "\x1b[%dA\x1b[J", drawn)
		}
		for _, e := range b.events {
			r.printWatchEvent(e, true)
		}
		if live {
			drawn = r.drawBatch(b.batch, nodes)
		}
		if !b.finished {
			return false, nil
		}
		if !live && !r.machine() {
			r.drawBatch(b.batch, nodes)
		}
		return true, r.batchOutcome(b.batch, nodes)
	})
}

// adminBatchPoll is what one poll of a batch found.
type adminBatchPoll struct {
	batch    adminBatch
	events   []adminWatchEvent
	finished bool
}

// pollBatch reads the batch, then each node not finished yet.
func (r *adminRun) pollBatch(ctx context.Context, c *adminClient, id string, nodes map[string]*adminBatchNode) (adminBatchPoll, error) {
	var p adminBatchPoll
	resp, err := c.do(ctx, http.MethodGet, adminPath(adminBatchesPath, id), nil, nil)
	if err != nil {
		return p, err
	}
	if err := resp.decode(&p.batch); err != nil {
		return p, err
	}
	p.finished = true
	for _, it := range p.batch.Items {
		if it.OnboardingID == "" {
			continue // never started: its error is on the item
		}
		n := nodes[it.OnboardingID]
		if n == nil {
			n = &adminBatchNode{follow: newFollower(it.OnboardingID)}
			nodes[it.OnboardingID] = n
		}
		n.item = it
		if n.done {
			continue
		}
		d, evs, err := n.follow.poll(ctx, c)
		if err != nil {
			return p, err
		}
		n.last, n.polled = d, true
		p.events = append(p.events, evs...)
		if _, ended := adminOutcome(string(d.Status)); ended {
			n.done = true
		} else {
			p.finished = false
		}
	}
	// Several nodes' events interleave by time; status lines of one node
	// keep their place after its own rows.
	sort.SliceStable(p.events, func(i, j int) bool {
		if p.events[i].OnboardingID == p.events[j].OnboardingID {
			return false
		}
		return p.events[i].Time.Before(p.events[j].Time)
	})
	return p, nil
}

// batchOutcome prints the summary and returns the exit code: 3 when any
// node needs an operator, else 4 when any failed, was cancelled or never
// started, else 0.
func (r *adminRun) batchOutcome(b adminBatch, nodes map[string]*adminBatchNode) error {
	counts := map[string]int{}
	notStarted := 0
	for _, it := range b.Items {
		n := nodes[it.OnboardingID]
		if it.OnboardingID == "" || n == nil {
			notStarted++
			continue
		}
		counts[string(n.last.Status)]++
	}
	if !r.machine() {
		summary := countsText(counts)
		if notStarted > 0 {
			summary += fmt.Sprintf(" not_started=%d", notStarted)
		}
		fmt.Fprintf(r.env.stdout, "batch %s ended: %s\n", adminCell(b.ID), strings.TrimSpace(summary))
	}
	switch {
	case counts[string(domain.OnboardingManualIntervention)] > 0:
		return &ExitCodeError{Code: adminExitManual}
	case counts[string(domain.OnboardingFailed)]+counts[string(domain.OnboardingCancelled)]+notStarted > 0:
		return &ExitCodeError{Code: adminExitFailed}
	}
	return nil
}

// adminProgressWidth is the number of cells of the progress bar.
const adminProgressWidth = 24

// drawBatch prints the batch as a table under a progress bar and returns
// how many lines it printed. Lines are cut to the terminal's width, so the
// count matches the screen and the next redraw lands in place.
func (r *adminRun) drawBatch(b adminBatch, nodes map[string]*adminBatchNode) int {
	ended := 0
	for _, it := range b.Items {
		if n := nodes[it.OnboardingID]; it.OnboardingID == "" || (n != nil && n.done) {
			ended++
		}
	}
	total := max(len(b.Items), 1)
	filled := ended * adminProgressWidth / total
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "batch %s  [%s%s] %d/%d ended\n", adminCell(b.ID),
		strings.Repeat("█", filled), strings.Repeat("░", adminProgressWidth-filled), ended, len(b.Items))
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	if !r.noHeaders {
		fmt.Fprintln(tw, "HOSTNAME\tSTATUS\tSTAGE\tMAAS STATUS\tATTEMPT\tELAPSED")
	}
	now := r.env.clock.Now()
	for _, it := range b.Items {
		n := nodes[it.OnboardingID]
		if it.OnboardingID == "" || n == nil || !n.polled {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", adminCell(it.Hostname), adminCell(orDash(it.Status)), "-", "-", "-", adminCell(orDash(itemError(it.Error))))
			continue
		}
		o := n.last.Onboarding
		end := lastKnown(n.last)
		switch {
		case o.CompletedAt != nil:
			end = *o.CompletedAt
		case !n.done && now.After(end):
			// The stack's clock may run faster than this one (a local
			// stack's time scale): never count back before what it reported.
			end = now
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", adminCell(o.Hostname), adminCell(string(o.Status)), adminCell(orDash(string(o.Stage))),
			adminCell(orDash(n.follow.maasStat)), strconv.Itoa(o.Attempt), elapsed(end.Sub(o.CreatedAt)))
	}
	_ = tw.Flush()
	width := 0
	if r.env.width != nil {
		width = r.env.width()
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	for _, l := range lines {
		fmt.Fprintln(r.env.stdout, cut(l, width))
	}
	return len(lines)
}

// cut shortens a line to width runes (0: no limit).
func cut(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) < width {
		return s
	}
	rs := []rune(s)
	return string(rs[:width-1])
}

// elapsed prints a duration as m:ss or h:mm:ss.
func elapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// lastKnown is the latest time an onboarding's record or timeline shows.
func lastKnown(d adminOnboardingDetail) time.Time {
	t := d.UpdatedAt
	for _, e := range d.Timeline {
		if e.Time.After(t) {
			t = e.Time
		}
	}
	return t
}
