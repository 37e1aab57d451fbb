package asl

// eventLog is an execution's history. It grows by whole chunks that never
// move once allocated: a long history (a 12,000-transition loop records
// 24,000 events of some 200 bytes) grows without copying what it holds, and
// a reader that took the length under the execution's lock reads the events
// below it without the lock while the execution appends beyond it.
type eventLog struct {
	chunks [][]event // chunks[0] has the capacity the log started with; later ones eventChunk
	n      int
}

// eventChunk is the capacity of every chunk after the first.
const eventChunk = 1024

func newEventLog(capacity int) eventLog {
	return eventLog{chunks: [][]event{make([]event, 0, max(capacity, 1))}}
}

func (l *eventLog) len() int { return l.n }

func (l *eventLog) append(ev event) {
	last := len(l.chunks) - 1
	if len(l.chunks[last]) == cap(l.chunks[last]) {
		l.chunks = append(l.chunks, make([]event, 0, eventChunk))
		last++
	}
	l.chunks[last] = append(l.chunks[last], ev)
	l.n++
}

// snapshot returns the log as it is; the caller holds the lock that
// guards appends, and may read the copy's events without it.
func (l *eventLog) snapshot() eventLog {
	return eventLog{chunks: append([][]event(nil), l.chunks...), n: l.n}
}

// at returns event i (0-based) of a snapshot or of the log itself.
func (l *eventLog) at(i int) *event {
	first := cap(l.chunks[0])
	if i < first {
		return &l.chunks[0][:first][i]
	}
	i -= first
	c := l.chunks[1+i/eventChunk]
	return &c[:cap(c)][i%eventChunk]
}
