package cache

// What the scheduler's profiles ask of the one cache: queue admission, the
// eviction actions admission may count on, the status writer, and which
// profiles report reservations. The plugins' factories hand their
// profile's settings to the Provider, which combines them and applies the
// combination to the cache once (Seal), before anything feeds it; the
// cache itself has no setter, so no factory flips a setting on a cache
// already in use. One cache, one admission loop and one status writer
// serve every profile, so two profiles that ask for one thing differently
// are a configuration error, refused when the second one's plugin is built.

import (
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/caldera-sched/caldera/pkg/admission"
)

// agreed is one setting that every profile making it must make alike.
type agreed[T comparable] struct {
	set bool
	v   T
	// by is the profile that made it first, for the error naming both.
	by string
}

// agree records profile's v, or refuses it when another profile made the
// setting otherwise; what names the setting as a user configures it (the
// plugins prefix their name).
func (a *agreed[T]) agree(what, profile string, v T) error {
	switch {
	case !a.set:
		a.set, a.v, a.by = true, v, profile
	case a.v != v:
		return fmt.Errorf("%s: profiles disagree: profile %s asks for %+v, profile %s for %+v; give every profile the same, since one cache serves them all", what, profile, v, a.by, a.v)
	}
	return nil
}

// evictionKinds are the eviction actions CalderaReclaim runs.
type evictionKinds struct{ reclaim, preempt bool }

// String renders the kinds as CalderaReclaim's args name them.
func (e evictionKinds) String() string {
	return fmt.Sprintf("enableReclaim=%t enablePreemption=%t", e.reclaim, e.preempt)
}

// settingsBook holds the profiles' settings until Seal applies them.
type settingsBook struct {
	mu sync.Mutex
	// sealed: Seal has applied the settings; later ones are refused, since
	// nothing would wire what they need.
	sealed    bool
	admission agreed[admission.Options]
	// admitting are the profiles with CalderaEnqueue, whose pods
	// admission admits.
	admitting []string
	evictions agreed[evictionKinds]
	status    agreed[ReconcilerOptions]
	// reserving are the profiles whose CalderaGang reports reservations.
	reserving map[string]bool
}

// change applies set to the book unless it is sealed; what names the
// setting for the error.
func (s *settingsBook) change(what string, set func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sealed {
		return fmt.Errorf("%s set up after the cache started: plugins are built before Start", what)
	}
	return set()
}

// EnableAdmission turns on queue admission for the profile named profile
// (CalderaEnqueue's factory calls it). Every profile that enables it must
// pass the same options. Seal installs the admission state; what feeds it
// (Queues, namespaces, every pod, quotas) is wired by pkg/feed, and the
// command runs the AdmissionLoop.
func (p *Provider) EnableAdmission(profile string, opts admission.Options) error {
	s := &p.settings
	return s.change("queue admission for profile "+profile, func() error {
		if err := s.admission.agree("args", profile, opts); err != nil {
			return err
		}
		s.admitting = append(s.admitting, profile)
		return nil
	})
}

// EnableEvictions tells admission which eviction actions the profile's
// CalderaReclaim runs (its factory calls it). With reclaim, a group within
// its queue's deserved share is admitted even when the cluster is full of
// what other queues hold above theirs; with preempt, a group is admitted
// into room its queue's lower-priority pods hold. Either way the evictions
// will free the room. One admission pass admits for every profile, so
// every profile with CalderaReclaim must run the same actions: a pass that
// counted on an action one profile does not run would admit gangs of that
// profile into room nothing frees. A profile without CalderaReclaim asks
// for nothing.
func (p *Provider) EnableEvictions(profile string, reclaim, preempt bool) error {
	s := &p.settings
	return s.change("evictions for profile "+profile, func() error {
		return s.evictions.agree("enableReclaim and enablePreemption", profile, evictionKinds{reclaim, preempt})
	})
}

// EnableStatus asks for the status writer (pkg/status), which the command
// starts after the cache (StatusOptions). Every profile's CalderaGang
// calls it; one process writes status one way, so every profile must ask
// for the same period.
func (p *Provider) EnableStatus(profile string, opts ReconcilerOptions) error {
	s := &p.settings
	return s.change("the status writer for profile "+profile, func() error {
		return s.status.agree("statusSyncPeriodSeconds", profile, opts)
	})
}

// StatusOptions returns what EnableStatus recorded, and whether a profile
// asked for status at all.
func (p *Provider) StatusOptions() (ReconcilerOptions, bool) {
	p.settings.mu.Lock()
	defer p.settings.mu.Unlock()
	return p.settings.status.v, p.settings.status.set
}

// TrackReservations records that profile's CalderaGang reports the nodes
// the scheduler reserves for members (Reserve, Permit, Unreserve). Once
// any profile does, the cache counts only the pods of such profiles as
// reachable members (pods no profile of ours can place wait elsewhere).
func (p *Provider) TrackReservations(profile string) error {
	s := &p.settings
	return s.change("reservations for profile "+profile, func() error {
		if s.reserving == nil {
			s.reserving = map[string]bool{}
		}
		s.reserving[profile] = true
		return nil
	})
}

// TracksReservations says whether profile reports reservations: without
// that, Cache.GangPlacement misses the members the profile has assumed.
// O(1).
func (p *Provider) TracksReservations(profile string) bool {
	p.settings.mu.Lock()
	defer p.settings.mu.Unlock()
	return p.settings.reserving[profile]
}

// Seal says every plugin is built: it applies the profiles' settings to
// the cache and refuses any made later, and returns the cache, which is
// then to be fed (pkg/feed.Wire calls it). Later calls return the cache
// and apply nothing. It fails when no plugin has created the cache.
func (p *Provider) Seal() (*Cache, error) {
	c := p.Cache()
	if c == nil {
		return nil, errors.New("no Caldera plugin has created the cache")
	}
	s := &p.settings
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sealed {
		s.sealed = true
		s.applyTo(c)
	}
	return c, nil
}

// applyTo sets c up as the settings say. c has not been fed: the gangs
// it knows (none, outside tests) become admission units.
func (s *settingsBook) applyTo(c *Cache) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reclaim, c.preempt = s.evictions.v.reclaim, s.evictions.v.preempt
	if len(s.reserving) > 0 {
		c.reservingProfiles = maps.Clone(s.reserving)
	}
	if s.admission.set {
		c.adm = admission.NewState(s.admission.v, observeAdmissionWait, s.admitting...)
		c.adm.AttachLocked(&c.feasible, c.groups, c.dirty, c.membersSynced.fired())
	}
}
