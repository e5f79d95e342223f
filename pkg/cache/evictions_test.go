package cache

import (
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/reclaim"
)

// evictionsOf is what a preemptor's plan records for victims.
func evictionsOf(preemptor types.UID, victims ...*v1.Pod) []admission.Eviction {
	out := make([]admission.Eviction, len(victims))
	for i, v := range victims {
		out[i] = admission.Eviction{Victim: v.UID, Preemptor: preemptor, PreemptorName: "ns/" + string(preemptor), Mode: reclaim.Reclaim, Queue: "b", VictimQueue: "a"}
	}
	return out
}

func wantInFlight(t *testing.T, c *Cache, pods []*v1.Pod, want ...*v1.Pod) {
	t.Helper()
	got := c.Evictions().InFlight(pods)
	if len(got) != len(want) {
		t.Errorf("in flight: %v, want %d pods", got, len(want))
	}
	for _, p := range want {
		if !got[p.UID] {
			t.Errorf("%s is not in flight; in flight: %v", p.Name, got)
		}
	}
}

func TestEvictionBookLifecycle(t *testing.T) {
	c, all := boundVictims(t)
	v1_, v2, v3 := all[0], all[1], all[2]
	now := time.Now()

	if !c.Evictions().Start(evictionsOf("pre-a", v1_, v2), now) {
		t.Fatal("Start for pre-a refused on an empty book")
	}
	wantInFlight(t, c, all, v1_, v2)

	// Another preemptor may not take v2 while pre-a evicts it, and gets
	// none of its other victims either.
	if c.Evictions().Start(evictionsOf("pre-b", v3, v2), now) {
		t.Error("Start for pre-b took v2, which pre-a is evicting")
	}
	wantInFlight(t, c, all, v1_, v2)
	// Nor may it finish or abandon pre-a's evictions.
	if _, _, ok := c.Evictions().Finish("pre-b", v1_, nil); ok {
		t.Error("Finish by pre-b reported pre-a's eviction of v1")
	}
	c.Evictions().Abandon("pre-b", []types.UID{v1_.UID, v2.UID})
	wantInFlight(t, c, all, v1_, v2)

	// A made eviction stays in flight until the pod leaves; a failed one
	// is forgotten, so the pod may be chosen again.
	e, _, ok := c.Evictions().Finish("pre-a", v1_, nil)
	if !ok || e.PreemptorName != "ns/pre-a" || e.Mode != reclaim.Reclaim || e.Queue != "b" || e.VictimQueue != "a" {
		t.Errorf("Finish(pre-a, v1) = %+v, %v", e, ok)
	}
	if _, _, ok := c.Evictions().Finish("pre-a", v2, errors.New("conflict")); !ok {
		t.Error("Finish(pre-a, v2) with an error found no eviction")
	}
	wantInFlight(t, c, all, v1_)
	podEvent(c, next(v1_, phase(v1.PodRunning)))
	wantInFlight(t, c, all, v1_)
	podDelete(c, v1_)
	wantInFlight(t, c, all)
	if len(c.evictions.Entries) != 0 {
		t.Errorf("book holds %d entries after every pod left or failed", len(c.evictions.Entries))
	}

	// Abandoning a plan frees its victims for the next one.
	if !c.Evictions().Start(evictionsOf("pre-b", v2, v3), now) {
		t.Fatal("Start for pre-b refused with v2 and v3 free")
	}
	c.Evictions().Abandon("pre-b", []types.UID{v2.UID, v3.UID})
	wantInFlight(t, c, all)
}

// A victim that leaves before the Executor reports its eviction keeps its
// entry for the report (the victim's Events need it), and is forgotten
// after AbandonAfter when no report comes.
func TestEvictionBookVictimLeavesFirst(t *testing.T) {
	c, all := boundVictims(t)
	v1_, v2, v3 := all[0], all[1], all[2]
	now := time.Now()
	if !c.Evictions().Start(evictionsOf("pre", v1_, v2), now) {
		t.Fatal("Start refused on an empty book")
	}
	podDelete(c, v1_)
	podEvent(c, next(v2, phase(v1.PodSucceeded)))
	if e, _, ok := c.Evictions().Finish("pre", v1_, nil); !ok || e.Victim != v1_.UID {
		t.Errorf("Finish(v1) after v1 left = %+v, %v; want its eviction", e, ok)
	}
	if _, _, ok := c.Evictions().Finish("pre", v1_, nil); ok {
		t.Error("v1's eviction is still recorded after it was reported and the pod left")
	}
	// v2 is never reported; v3's plan, well after, forgets it.
	if !c.Evictions().Start(evictionsOf("pre-2", v3), now.Add(admission.AbandonAfter+time.Minute)) {
		t.Fatal("Start for v3 refused")
	}
	if _, _, ok := c.Evictions().Finish("pre", v2, nil); ok {
		t.Error("v2's eviction outlived abandonAfter after the pod left")
	}
	if len(c.evictions.Started) != 1 {
		t.Errorf("%d entries queued after the sweep, want v3's only", len(c.evictions.Started))
	}
}

// An eviction the Executor never reports while its pod stays (upstream drops
// a plan's last victim unreported when an earlier eviction fails) marks the
// pod as leaving only until AbandonAfter; a reported one stays until the pod
// leaves, however long its termination takes.
func TestEvictionBookUnreportedWhilePodStays(t *testing.T) {
	c, all := boundVictims(t)
	v1_, v2, v3 := all[0], all[1], all[2]
	now := time.Now()
	if !c.Evictions().Start(evictionsOf("pre", v1_, v2), now) {
		t.Fatal("Start refused on an empty book")
	}
	if _, _, ok := c.Evictions().Finish("pre", v1_, nil); !ok {
		t.Fatal("Finish(v1) found no eviction")
	}
	// Just before the bound both are still in flight.
	if !c.Evictions().Start(evictionsOf("pre-2", v3), now.Add(admission.AbandonAfter)) {
		t.Fatal("Start for v3 refused")
	}
	wantInFlight(t, c, all, v1_, v2, v3)
	// After it, v2 (never reported) is free again; v1 (reported, still
	// terminating) and v3 (recent) stay.
	c.Evictions().Abandon("pre-2", []types.UID{v3.UID})
	if !c.Evictions().Start(evictionsOf("pre-3", v3), now.Add(admission.AbandonAfter+time.Second)) {
		t.Fatal("Start for v3 refused after pre-2 abandoned it")
	}
	wantInFlight(t, c, all, v1_, v3)
	if !c.Evictions().Start(evictionsOf("pre-4", v2), now.Add(admission.AbandonAfter+time.Second)) {
		t.Error("v2, never reported, is still claimed after abandonAfter")
	}
}

// boundVictims is an admission cache with three bound singletons of queue a
// on n1, the victims the eviction-book tests evict.
func boundVictims(t *testing.T) (*Cache, []*v1.Pod) {
	t.Helper()
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("a"))
	var all []*v1.Pod
	for _, name := range []string{"v1", "v2", "v3"} {
		p := single("ns", name, inQueue("a"), boundTo("n1"))
		podEvent(c, p)
		all = append(all, p)
	}
	return c, all
}
