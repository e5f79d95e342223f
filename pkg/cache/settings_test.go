package cache

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/status"
)

// enableEvictions sets c's eviction kinds as Provider.Seal sets a cache's,
// for the tests that build a cache without a Provider.
func enableEvictions(c *Cache, reclaim, preempt bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reclaim, c.preempt = reclaim, preempt
}

// trackReservations records profile as one that reports reservations, as
// Provider.Seal does for every profile whose CalderaGang asked.
func trackReservations(c *Cache, profile string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reservingProfiles == nil {
		c.reservingProfiles = map[string]bool{}
	}
	c.reservingProfiles[profile] = true
}

// Profiles that ask for a setting alike share it; a profile that asks
// otherwise than an earlier one is refused, the error naming both
// profiles and both values. Eviction kinds are refused too: one admission
// pass admits for every profile, so it may count on an action only if
// every profile's CalderaReclaim runs it.
func TestSettingsConflicts(t *testing.T) {
	enq := func(opts admission.Options) func(*Provider, string) error {
		return func(p *Provider, prof string) error { return p.EnableAdmission(prof, opts) }
	}
	evict := func(reclaim, preempt bool) func(*Provider, string) error {
		return func(p *Provider, prof string) error { return p.EnableEvictions(prof, reclaim, preempt) }
	}
	period := func(d time.Duration) func(*Provider, string) error {
		return func(p *Provider, prof string) error { return p.EnableStatus(prof, ReconcilerOptions{SyncPeriod: d}) }
	}
	for _, tc := range []struct {
		name        string
		first, then func(*Provider, string) error
		// want are the error's parts; none: the second profile is accepted.
		want []string
	}{
		{"same admission", enq(singletons), enq(singletons), nil},
		{"admission differs", enq(singletons), enq(admission.Options{AdmitSingletons: false, StarvationThreshold: -1}),
			[]string{"args: profiles disagree", "profile batch-b asks for {", "AdmitSingletons:false", "profile batch-a for {", "AdmitSingletons:true"}},
		{"same evictions", evict(true, true), evict(true, true), nil},
		{"reclaim differs", evict(true, true), evict(false, true),
			[]string{"enableReclaim and enablePreemption: profiles disagree", "profile batch-b asks for enableReclaim=false enablePreemption=true", "profile batch-a for enableReclaim=true enablePreemption=true"}},
		{"preemption differs", evict(true, false), evict(true, true),
			[]string{"profile batch-b asks for enableReclaim=true enablePreemption=true", "profile batch-a for enableReclaim=true enablePreemption=false"}},
		{"same status period", period(time.Second), period(time.Second), nil},
		{"status period differs", period(time.Second), period(2 * time.Second),
			[]string{"statusSyncPeriodSeconds: profiles disagree", "profile batch-b asks for {SyncPeriod:2s}", "profile batch-a for {SyncPeriod:1s}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewProvider(status.AlwaysLeading())
			if err := tc.first(p, "batch-a"); err != nil {
				t.Fatalf("first profile: %v", err)
			}
			err := tc.then(p, "batch-b")
			if tc.want == nil {
				if err != nil {
					t.Fatalf("second profile asking alike: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("second profile asking otherwise: no error, want one naming %q", tc.want)
			}
			for _, part := range tc.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q lacks %q", err, part)
				}
			}
		})
	}
}

// Seal applies the profiles' settings to the cache, once, and refuses any
// made afterwards: nothing would wire what they need.
func TestSealAppliesSettings(t *testing.T) {
	p := NewProvider(status.AlwaysLeading())
	h := newFakeHandle()
	c, err := p.Get(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	for _, prof := range []string{"batch-a", "batch-b"} {
		if err := p.EnableAdmission(prof, singletons); err != nil {
			t.Fatal(err)
		}
		if err := p.EnableEvictions(prof, false, true); err != nil {
			t.Fatal(err)
		}
		if err := p.TrackReservations(prof); err != nil {
			t.Fatal(err)
		}
	}
	if c.Admitting() {
		t.Errorf("admission on before Seal: a factory's setting reached the cache")
	}
	if sealed, err := p.Seal(); err != nil || sealed != c {
		t.Fatalf("Seal = %p, %v; want the cache %p", sealed, err, c)
	}
	of := func(sched string) *v1.Pod { return &v1.Pod{Spec: v1.PodSpec{SchedulerName: sched}} }
	c.mu.RLock()
	got := []bool{c.adm.On(), c.adm.Ours(of("batch-a")), c.adm.Ours(of("batch-b")), c.adm.Ours(of("other")), c.reclaim, c.preempt, c.reservingProfiles["batch-b"]}
	c.mu.RUnlock()
	if want := []bool{true, true, true, false, false, true, true}; !slices.Equal(got, want) {
		t.Errorf("after Seal: admission on, ours(a, b, other), reclaim, preempt, b reserving = %v, want %v", got, want)
	}
	if !p.TracksReservations("batch-a") || p.TracksReservations("other") {
		t.Errorf("TracksReservations(batch-a, other) = %v, %v; want true, false", p.TracksReservations("batch-a"), p.TracksReservations("other"))
	}
	for what, late := range map[string]error{
		"admission":    p.EnableAdmission("late", singletons),
		"evictions":    p.EnableEvictions("late", false, true),
		"status":       p.EnableStatus("late", ReconcilerOptions{SyncPeriod: time.Second}),
		"reservations": p.TrackReservations("late"),
	} {
		if late == nil || !strings.Contains(late.Error(), "after the cache started") {
			t.Errorf("%s set up after Seal: %v, want refused", what, late)
		}
	}
	if _, ok := p.StatusOptions(); ok {
		t.Errorf("StatusOptions: on, though only a refused profile asked")
	}
}

// Seal with no plugin built fails: there is no cache to feed.
func TestSealWithoutCache(t *testing.T) {
	if c, err := NewProvider(status.AlwaysLeading()).Seal(); err == nil {
		t.Errorf("Seal before any plugin built the cache = %p, want an error", c)
	}
}
