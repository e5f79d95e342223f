package cache

// The Provider that hands the one cache to every plugin, and records for
// it the profiles that built it (Event recorders, plain profiles: the
// cache's profileBook) and what they ask of it (settings.go).

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/status"
)

// Provider hands out the one Cache of a scheduler. kube-scheduler builds every
// plugin of every profile from factories, with no place for shared objects, so
// the command creates one Provider and closes every factory over it: no global
// state, and a test that builds two schedulers gets two caches.
type Provider struct {
	once  sync.Once
	cache *Cache
	err   error
	lead  *status.Leadership
	// ready holds the cache once created, for Cache (read without the once).
	ready atomic.Pointer[Cache]
	// settings are what the profiles' plugins asked of the cache, applied
	// to it once, by Seal.
	settings settingsBook
}

// NewProvider returns a Provider whose cache is created on first use and
// exports the queue gauges exactly while the scheduler that lead follows is
// leading (status.Leadership, which the status writer follows too). The
// cache is fed by pkg/feed, which the command starts once every plugin is
// built.
func NewProvider(lead *status.Leadership) *Provider {
	if lead == nil {
		panic("cache.NewProvider: nil Leadership")
	}
	return &Provider{lead: lead}
}

// Get returns the shared cache, creating it on the first call. It starts
// nothing: plugin factories run while kube-scheduler builds its profiles,
// and the command starts the shared machinery once, afterwards (pkg/feed
// and the status writer). ctx bounds the cache's lifetime (it is the
// scheduler's context).
func (p *Provider) Get(ctx context.Context, h fwk.Handle) (*Cache, error) {
	p.create(ctx, h)
	if p.err == nil {
		p.cache.profiles.addRecorder(h)
		p.cache.profiles.note(h.ProfileName(), true)
	}
	return p.cache, p.err
}

// GetForGang is Get for CalderaGang. The barrier holds a gang's members
// back but leaves how the queue orders pods alone, so a profile that builds
// it beside the queue sort only (the sole-scheduler configuration's
// default-scheduler profile, a barrier for gangs whose pods name no
// scheduler) stays plain: its pods are ordered as PrioritySort orders them
// and never behind batch pods. Any other Caldera plugin of the profile
// makes it Caldera's, as before.
func (p *Provider) GetForGang(ctx context.Context, h fwk.Handle) (*Cache, error) {
	p.create(ctx, h)
	if p.err == nil {
		p.cache.profiles.addRecorder(h)
		p.cache.profiles.note(h.ProfileName(), false)
	}
	return p.cache, p.err
}

// GetForQueueSort is Get for CalderaQueueSort. kube-scheduler runs one
// QueueSort plugin for every profile, so a profile that is not Caldera's
// (such as a default-scheduler profile beside Caldera's) builds it too; a
// profile that builds no other Caldera plugin is noted as plain
// (Provider.NoteProfile), and its pods are ordered as PrioritySort orders them.
func (p *Provider) GetForQueueSort(ctx context.Context, h fwk.Handle) (*Cache, error) {
	p.create(ctx, h)
	if p.err == nil {
		p.cache.profiles.note(h.ProfileName(), false)
	}
	return p.cache, p.err
}

// create makes the cache on the first call, with h's handle.
func (p *Provider) create(ctx context.Context, h fwk.Handle) {
	p.once.Do(func() {
		p.cache = newEmpty(ctx, h)
		p.cache.lead = p.lead
		p.ready.Store(p.cache)
	})
}

// Cache returns the cache once a plugin has created it, else nil. For tools
// and tests that look at a running scheduler's cache from outside its plugins.
func (p *Provider) Cache() *Cache { return p.ready.Load() }

// NoteProfile records that the profile named name built a Caldera plugin;
// caldera says whether that plugin is one other than CalderaQueueSort (see
// profileBook.note). The Get methods note their handle's profile; tests
// that build no plugin note profiles here. It does nothing before a plugin
// has created the cache.
func (p *Provider) NoteProfile(name string, caldera bool) {
	if c := p.Cache(); c != nil {
		c.profiles.note(name, caldera)
	}
}

// Recorder implements status.Source: the Event recorder of the profile
// named schedulerName, else that of the first Caldera profile built (for a
// pod of no Caldera profile, or a PodGroup with no member yet).
func (c *Cache) Recorder(schedulerName string) events.EventRecorderLogger {
	if r := c.profiles.recorder(schedulerName); r != nil {
		return r
	}
	return c.handle.EventRecorder()
}
