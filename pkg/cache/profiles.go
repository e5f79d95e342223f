package cache

import (
	"maps"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
)

// profileBook is what the cache knows of the scheduler profiles that built
// it: which are plain (built no Caldera plugin but the queue sort) and
// each one's Event recorder. The Provider writes it while kube-scheduler
// builds its profiles; it is read on every queue-sort comparison
// (SortInfo) and every Event the status writer posts. Writers are few and
// rare (one per plugin built), readers hot, so a writer copies the set
// and swaps it in, and readers take no lock: neither the cache's lock nor
// one of the book's own.
type profileBook struct {
	// mu serializes writers; readers load cur.
	mu  sync.Mutex
	cur atomic.Pointer[profileSet]
}

// profileSet is one immutable state of the book.
type profileSet struct {
	// caldera holds every profile that built a Caldera plugin, by name:
	// true when it built one other than the queue sort.
	caldera map[string]bool
	// recorders are the profiles' Event recorders, by scheduler name: an
	// Event about a pod is reported by its own profile (reportingController
	// is the profile's name), not by whichever profile built the cache.
	recorders map[string]events.EventRecorderLogger
	// fallback is the first Caldera profile's recorder: the cache may have
	// been built by a plain profile's queue sort, whose name must not
	// report Caldera's Events.
	fallback events.EventRecorderLogger
}

// update applies change to a copy of the current set and publishes it.
func (b *profileBook) update(change func(s *profileSet)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	next := &profileSet{caldera: map[string]bool{}, recorders: map[string]events.EventRecorderLogger{}}
	if cur := b.cur.Load(); cur != nil {
		maps.Copy(next.caldera, cur.caldera)
		maps.Copy(next.recorders, cur.recorders)
		next.fallback = cur.fallback
	}
	change(next)
	b.cur.Store(next)
}

// note records that the profile named name built a Caldera plugin; caldera
// says whether that plugin is one other than CalderaQueueSort. A profile
// every call of which says false is plain: its pods are ordered as
// upstream's PrioritySort orders them (SortInfo.Plain). A profile stays
// Caldera's once any call said true, whatever order its plugins are built
// in.
func (b *profileBook) note(name string, caldera bool) {
	b.update(func(s *profileSet) { s.caldera[name] = s.caldera[name] || caldera })
}

// addRecorder records h's profile's Event recorder, the first one a
// profile's plugins hand in; the first recorder recorded is the fallback.
func (b *profileBook) addRecorder(h fwk.Handle) {
	b.update(func(s *profileSet) {
		if _, ok := s.recorders[h.ProfileName()]; !ok {
			s.recorders[h.ProfileName()] = h.EventRecorder()
		}
		if s.fallback == nil {
			s.fallback = h.EventRecorder()
		}
	})
}

// plain reports whether the profile named name built no Caldera plugin but
// the queue sort. A profile never noted is not plain. O(1), no lock.
func (b *profileBook) plain(name string) bool {
	s := b.cur.Load()
	if s == nil {
		return false
	}
	caldera, known := s.caldera[name]
	return known && !caldera
}

// recorder returns the Event recorder of the profile named name, else the
// fallback, else nil.
func (b *profileBook) recorder(name string) events.EventRecorderLogger {
	s := b.cur.Load()
	if s == nil {
		return nil
	}
	if r := s.recorders[name]; r != nil {
		return r
	}
	return s.fallback
}
