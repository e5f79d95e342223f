package queue

import (
	"slices"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// Group is one unit of admission: a gang (PodGroup) or a singleton pod.
type Group struct {
	// Key identifies the group; unique in a Pending.
	Key Key
	// Queue names the group's queue.
	Queue string
	// Priority orders groups within a queue: higher first.
	Priority int32
	// Created orders groups of equal priority: older first; then Key.
	Created time.Time
	// Request is what admission reserves for the group: minResources, else the
	// sum of the minMember smallest members' requests (gang.MinRequest).
	// Pending keeps the map; do not modify it after Set.
	Request resources.List
	// Members counts the group's member pods that exist and are not finished;
	// MinMember is how many it needs. The group is ready for admission when
	// Members >= MinMember (else CheckMembers).
	Members, MinMember int32
	// FreeRoomUntil: before this time the group is admitted on free room
	// only, counting nothing that preemption or reclaim would free. Set
	// when the group's last plan to evict found no victims: admitted on
	// that room again, it would hold its queue's room for a plan that
	// cannot be made, and be released, again and again.
	FreeRoomUntil time.Time
}

// freeRoomOnly: at now, the group may not count eviction room.
func (g Group) freeRoomOnly(now time.Time) bool { return now.Before(g.FreeRoomUntil) }

// Ready reports whether enough members exist: the members check
// (CheckMembers) that keeps a group out of admission passes.
func (g Group) Ready() bool { return g.Members >= g.MinMember }

// where an entry sits in its queue.
const (
	inHeap   uint8 = iota // ready, ordered in the queue's heap
	notReady              // fewer members than minMember
	parked                // its request alone can never fit the queue's limits
	skipped               // examined by the running pass and refused; back in the heap after it
)

// amount is one positive entry of a request, by resource position in Pending.
type amount struct {
	r int32
	v int64
}

type entry struct {
	g        Group
	req      []amount
	sec      int64 // g.Created, split for a cheap comparison
	nsec     int32
	q        *pqueue
	where    uint8
	pos      int // index in q.heap (inHeap) or q.parked (parked)
	decision Decision
	gen      uint64 // the pass that made decision; 0 for none since the last Set
}

// before orders groups: priority (higher first), creation time, key.
func (a *entry) before(b *entry) bool {
	if a.g.Priority != b.g.Priority {
		return a.g.Priority > b.g.Priority
	}
	if a.sec != b.sec {
		return a.sec < b.sec
	}
	if a.nsec != b.nsec {
		return a.nsec < b.nsec
	}
	return a.g.Key.Compare(b.g.Key) < 0
}

// pqueue is the pending side of one queue.
type pqueue struct {
	name    string
	heap    []*entry // ready groups, a binary min-heap by entry.before
	parked  []*entry
	groups  int     // every group of the queue, whatever where
	pending []int64 // sum of every group's request, by resource position

	// parkedCeil is the ceiling every parked group's request exceeds
	// somewhere; when the ceiling rises anywhere, parked groups are retried.
	parkedCeil []int64

	// Starvation guard: the group found at the head and since when.
	headKey   Key
	headSince time.Time

	// What stopped the queue in pass stopGen, for the groups it did not reach.
	stop    Decision
	stopGen uint64

	// Per-pass state.
	node     int     // node in the pass's tree; -1 when missing or broken
	prio     int32   // the queue's priority
	dyn      float64 // (allocated + inflight) / deserved of the queue's own groups
	hpos     int     // index in the pass's queue heap
	budget   int     // refusals the pass may still look past
	refused  int     // groups refused this pass
	admitted int
	ahead    *entry   // the first refused group that counts as the head, if any
	skip     []*entry // refused groups waiting to go back into the heap
	done     bool
	wants    bool // a group within its share was refused for room (lend.go)
	holds    int  // reservations asked for this pass (Planner.Hold)
}

// Pending holds the groups waiting for admission, per queue, ordered by
// priority, creation time and key. Set and Delete cost O(log n + r) for n
// groups in the queue and r resource names in the request; the admission
// pass pops groups from the queues' heads. A Pending is not safe for
// concurrent use.
type Pending struct {
	groups map[Key]*entry
	queues map[string]*pqueue
	rindex map[string]int32 // resource name -> position
	rnames []string
	gen    uint64 // passes run

	pass passState
}

// NewPending returns an empty store.
func NewPending() *Pending {
	return &Pending{
		groups: map[Key]*entry{},
		queues: map[string]*pqueue{},
		rindex: map[string]int32{},
	}
}

// resource returns the position of a resource name, adding it when new.
func (p *Pending) resource(name string) int32 {
	if i, ok := p.rindex[name]; ok {
		return i
	}
	i := int32(len(p.rnames))
	p.rindex[name] = i
	p.rnames = append(p.rnames, name)
	return i
}

// Set adds a group, or replaces the group with the same key (its queue,
// priority, request or member counts may have changed). The group's last
// decision is forgotten: it will be examined afresh.
func (p *Pending) Set(g Group) {
	e := p.groups[g.Key]
	if e == nil {
		e = &entry{}
		p.groups[g.Key] = e
	} else {
		p.unlink(e)
	}
	e.g = g
	e.sec, e.nsec = g.Created.Unix(), int32(g.Created.Nanosecond())
	e.req = e.req[:0]
	for k, v := range g.Request {
		if v > 0 {
			e.req = append(e.req, amount{p.resource(k), v})
		}
	}
	// By name, so that the first resource that fails is the same every time.
	for i := 1; i < len(e.req); i++ {
		for j := i; j > 0 && p.rnames[e.req[j].r] < p.rnames[e.req[j-1].r]; j-- {
			e.req[j], e.req[j-1] = e.req[j-1], e.req[j]
		}
	}
	e.gen = 0
	e.decision = Decision{}
	q := p.queues[g.Queue]
	if q == nil {
		q = &pqueue{name: g.Queue, node: -1}
		p.queues[g.Queue] = q
	}
	e.q = q
	q.groups++
	if n := len(p.rnames); len(q.pending) < n {
		q.pending = append(q.pending, make([]int64, n-len(q.pending))...)
	}
	// Only ready groups are demand. A gang short of members cannot be
	// admitted, and may stay short for good (a member deleted with no
	// controller to recreate it); counted, its request would shrink every
	// other queue's deserved share and keep their pods out of idle room.
	// When its members arrive, Set counts it.
	if g.Ready() {
		for _, a := range e.req {
			q.pending[a.r] = satAdd(q.pending[a.r], a.v)
		}
		q.push(e)
	} else {
		e.where = notReady
	}
}

// Delete removes a group (admitted elsewhere, deleted, or no longer pending)
// and reports whether it was there.
func (p *Pending) Delete(key Key) bool {
	e := p.groups[key]
	if e == nil {
		return false
	}
	p.unlink(e)
	delete(p.groups, key)
	return true
}

// unlink takes e out of its queue, dropping the queue when it empties.
func (p *Pending) unlink(e *entry) {
	q := e.q
	switch e.where {
	case inHeap:
		q.remove(e.pos)
	case parked:
		last := len(q.parked) - 1
		q.parked[e.pos] = q.parked[last]
		q.parked[e.pos].pos = e.pos
		q.parked[last] = nil
		q.parked = q.parked[:last]
	}
	if e.where != notReady {
		for _, a := range e.req {
			q.pending[a.r] -= a.v // sums saturate only beyond any real cluster
		}
	}
	q.groups--
	if q.groups == 0 {
		delete(p.queues, q.name)
	}
	e.q = nil
}

// Get returns the group stored under key.
func (p *Pending) Get(key Key) (Group, bool) {
	if e := p.groups[key]; e != nil {
		return e.g, true
	}
	return Group{}, false
}

// Len returns the number of pending groups.
func (p *Pending) Len() int { return len(p.groups) }

// QueueLen returns the number of pending groups of the named queue.
func (p *Pending) QueueLen(queue string) int {
	if q := p.queues[queue]; q != nil {
		return q.groups
	}
	return 0
}

// Queues returns the names of the queues that have pending groups, in no
// particular order.
func (p *Pending) Queues() []string {
	out := make([]string, 0, len(p.queues))
	for name := range p.queues {
		out = append(out, name)
	}
	return out
}

// Order returns the keys of the named queue's ready groups in the order an
// admission pass examines them: priority (higher first), creation time,
// key. Groups short of members, and parked ones (whose request alone can
// never fit the queue's limits), are not examined and not listed. It sorts
// a copy of the queue's heap, O(n log n): for dumps and tools, not for a hot
// path.
func (p *Pending) Order(queue string) []Key {
	q := p.queues[queue]
	if q == nil || len(q.heap) == 0 {
		return nil
	}
	entries := slices.Clone(q.heap)
	slices.SortFunc(entries, func(a, b *entry) int {
		switch {
		case a.before(b):
			return -1
		case b.before(a):
			return 1
		}
		return 0
	})
	out := make([]Key, len(entries))
	for i, e := range entries {
		out[i] = e.g.Key
	}
	return out
}

// PendingRequest returns the sum of the requests of the named queue's ready
// pending groups (those with at least minMember members): the queue's
// Usage.Pending.
func (p *Pending) PendingRequest(queue string) resources.List {
	q := p.queues[queue]
	if q == nil {
		return nil
	}
	out := resources.List{}
	for i, v := range q.pending {
		if v != 0 {
			out[p.rnames[i]] = v
		}
	}
	return out
}

// Decision returns the latest decision about a pending group: its own when the
// last pass examined it (or it waits for more members, or its request can never
// fit), else the reason its queue stopped before reaching it, else CheckNone
// ("waiting for admission"). False when the key is not pending; admitted groups
// leave the store and their decision is in the pass's Result.
func (p *Pending) Decision(key Key) (Decision, bool) {
	e := p.groups[key]
	if e == nil {
		return Decision{}, false
	}
	q := e.q
	stopped := q.stopGen != 0 && q.stopGen == p.gen
	switch {
	case e.where == notReady:
		return Decision{Check: CheckMembers, Queue: q.name, Members: e.g.Members, MinMember: e.g.MinMember}, true
	case stopped && (q.stop.Check == CheckQueueMissing || q.stop.Check == CheckQueueBroken || q.stop.Check == CheckQueueClosed):
		return q.stop, true
	case e.gen != 0 && (e.gen == p.gen || e.where == parked):
		return e.decision, true
	case stopped:
		return q.stop, true
	}
	return Decision{Check: CheckNone, Queue: q.name}, true
}

// push adds a ready entry to the heap.
func (q *pqueue) push(e *entry) {
	e.where = inHeap
	e.pos = len(q.heap)
	q.heap = append(q.heap, e)
	q.up(e.pos)
}

// pop removes and returns the first entry of the heap.
func (q *pqueue) pop() *entry {
	e := q.heap[0]
	q.remove(0)
	return e
}

// remove takes the entry at heap index i out of the heap.
func (q *pqueue) remove(i int) {
	last := len(q.heap) - 1
	e := q.heap[i]
	if i != last {
		q.heap[i] = q.heap[last]
		q.heap[i].pos = i
	}
	q.heap[last] = nil
	q.heap = q.heap[:last]
	if i != last {
		if !q.down(i) {
			q.up(i)
		}
	}
	e.pos = -1
}

func (q *pqueue) up(i int) {
	h := q.heap
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		h[i].pos, h[p].pos = i, p
		i = p
	}
}

// down sifts heap index i down and reports whether it moved.
func (q *pqueue) down(i0 int) bool {
	h := q.heap
	i := i0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		j := l
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			j = r
		}
		if !h[j].before(h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		h[i].pos, h[j].pos = i, j
		i = j
	}
	return i > i0
}

// park moves a refused entry whose request can never fit to the parked list.
func (q *pqueue) park(e *entry) {
	e.where = parked
	e.pos = len(q.parked)
	q.parked = append(q.parked, e)
}
