package cache

import (
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/reclaim"
)

// A gang whose reclaim or preemption plan is still evicting keeps its
// admission when a member fails Filter meanwhile, and the cache hands each
// member the node the plan freed for it. Before, CalderaGang's PostFilter
// released the gang and un-admitted it (Release -> UnadmitLocked), and
// CalderaReclaim then refused the unadmitted preemptor: a gang never
// preempted. Once the victims are gone the plan is over and a release
// un-admits again.
func TestGangKeepsAdmissionWhileItsPlanEvicts(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "4"))
	c.ApplyNode(logger, mkNode("n2", "4"))
	victim := single("ns", "victim", inQueue("q"), boundTo("n1"), cpu("2"))
	podEvent(c, victim)
	addPG(c, mkPG("ns", "g", 2, pgQueue("q")))
	m0, m1 := memberOf("ns", "m0", "g", cpu("2")), memberOf("ns", "m1", "g", cpu("2"))
	podEvent(c, m0)
	podEvent(c, m1)
	pass(c, t0)
	wantAdmitted(t, c, verdict{ok: true}, m0, m1)

	group := admission.GangUnitKey(gangbook.GroupKey{Namespace: "ns", Name: "g"}).String()
	if !c.Evictions().Start([]admission.Eviction{{Victim: victim.UID, Preemptor: m0.UID, PreemptorName: "ns/m0", Group: group,
		Mode: reclaim.Preempt, Queue: "q", VictimQueue: "q"}}, time.Now()) {
		t.Fatal("Start refused on an empty book")
	}
	held := c.Evictions().HoldForGang(m0, group, map[types.UID]string{m0.UID: "n1", m1.UID: "n2"})
	if len(held) != 2 || held[m0.UID] == nil || held[m1.UID].Name != "m1" {
		t.Errorf("HoldForGang returned %v, want the pods m0 and m1", held)
	}
	if _, _, ok := c.Evictions().Finish(m0.UID, victim, nil); !ok {
		t.Fatal("Finish found no eviction")
	}

	// m1 fails Filter while the victim terminates: nothing is released.
	c.Unschedulable(logger, m1, t0, gang.Backoff{Base: time.Hour, Max: time.Hour}, "0/2 nodes are available: 2 Insufficient cpu.")
	wantAdmitted(t, c, verdict{ok: true}, m0, m1)
	if node, ok := c.Evictions().GangPlan(m1); !ok || node != "n2" {
		t.Errorf("GangPlan(m1) = %q, %v; want n2, true", node, ok)
	}
	if _, code, msg := c.PreFilter(m1, t0); code != admission.PreFilterOK {
		t.Errorf("the gang backs off while its plan evicts: %s", msg)
	}

	// The victim leaves: the plan is over, and a failure releases as ever.
	podDelete(c, next(victim, phase(v1.PodRunning)))
	if _, ok := c.Evictions().GangPlan(m1); ok {
		t.Error("the plan is still in flight after its only victim left")
	}
	c.Unschedulable(logger, m1, t0.Add(2*time.Hour), gang.Backoff{}, "0/2 nodes are available: 2 Insufficient cpu.")
	if got := admitted(c, m1); got.ok {
		t.Errorf("a gang released with no plan in flight kept its admission")
	}
	wantConsistent(t, c, "after the plan")
}

// A gang's plan ends when its evictions are abandoned (the Evaluator did not
// carry it out) or fail, not only when its victims leave: a plan that never
// ran must not keep the gang from being released or planned for again.
func TestGangPlanEndsWithItsEvictions(t *testing.T) {
	c, all := boundVictims(t)
	member := memberOf("ns", "m0", "g", cpu("1"))
	if !c.Evictions().Start(gangEvictions(member, all[0], all[1]), time.Now()) {
		t.Fatal("Start refused on an empty book")
	}
	if _, ok := c.Evictions().GangPlan(member); !ok {
		t.Fatal("no plan in flight after Start")
	}
	// One eviction fails: the plan still has the other in flight.
	c.Evictions().Finish(member.UID, all[0], errors.New("conflict"))
	if _, ok := c.Evictions().GangPlan(member); !ok {
		t.Fatal("the plan ended with one of its two evictions still in flight")
	}
	c.Evictions().Abandon(member.UID, []types.UID{all[1].UID})
	if _, ok := c.Evictions().GangPlan(member); ok {
		t.Fatal("the plan is in flight after its last eviction was abandoned")
	}
}

// A gang's plan ends when its victims have left, even when the Executor never
// reports their evictions: upstream skips the API call for a victim that is
// already terminating, and when one eviction fails it cancels the rest. The
// book keeps such an entry for the victim's Events until AbandonAfter, but the
// gang must not wait that long for room that is already free ("waiting for
// the victims of the gang's plan to leave" after every victim had gone).
func TestGangPlanEndsWhenItsVictimsLeaveUnreported(t *testing.T) {
	c, all := boundVictims(t)
	member := memberOf("ns", "m0", "g", cpu("1"))
	if !c.Evictions().Start(gangEvictions(member, all[0], all[1]), time.Now()) {
		t.Fatal("Start refused on an empty book")
	}
	// all[0] was already terminating: never reported, it leaves.
	podDelete(c, all[0])
	if _, ok := c.Evictions().GangPlan(member); !ok {
		t.Fatal("the plan ended with all[1] still to leave")
	}
	// all[1]'s eviction is cancelled, never reported; it leaves too.
	podDelete(c, all[1])
	if _, ok := c.Evictions().GangPlan(member); ok {
		t.Error("the plan is still in flight after every victim left")
	}
	// A late report still finds the eviction, for the victim's Events,
	// and does not end another plan.
	if e, _, ok := c.Evictions().Finish(member.UID, all[0], nil); !ok || e.Victim != all[0].UID {
		t.Errorf("Finish after the victim left = %+v, %v; want its eviction", e, ok)
	}
	if len(c.evictions.Gangs) != 0 {
		t.Errorf("book holds plans %v after the plan ended", c.evictions.Gangs)
	}
}

// Finish names the victim's PodGroup, for the Event on it, and none for a
// victim outside any gang; HoldForGang hands back only members of the
// preemptor's gang, and none for a preemptor outside any.
func TestEvictionsNameGroups(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "4"))
	addPG(c, mkPG("ns", "low", 1, pgQueue("q")))
	inGang := memberOf("ns", "v0", "low", boundTo("n1"), cpu("1"))
	alone := single("ns", "v1", inQueue("q"), boundTo("n1"), cpu("1"))
	podEvent(c, inGang)
	podEvent(c, alone)
	pre := single("ns", "pre", inQueue("q"), cpu("2"))
	if !c.Evictions().Start(evictionsOf(pre.UID, inGang, alone), time.Now()) {
		t.Fatal("Start refused on an empty book")
	}
	_, src, ok := c.Evictions().Finish(pre.UID, inGang, nil)
	if !ok || src == nil || src.Name != "low" || src.Namespace != "ns" {
		t.Errorf("Finish(v0) = %v, %v; want PodGroup ns/low", src, ok)
	}
	if _, src, ok := c.Evictions().Finish(pre.UID, alone, nil); !ok || src != nil {
		t.Errorf("Finish(v1) = %v, %v; want no PodGroup", src, ok)
	}
	if held := c.Evictions().HoldForGang(pre, "", map[types.UID]string{inGang.UID: "n1"}); len(held) != 0 {
		t.Errorf("HoldForGang for a pod outside any gang returned %v", held)
	}
}

// gangEvictions is what the plan of member's gang g records for victims.
func gangEvictions(member *v1.Pod, victims ...*v1.Pod) []admission.Eviction {
	evs := evictionsOf(member.UID, victims...)
	for i := range evs {
		evs[i].Group = admission.GangUnitKey(gangbook.GroupKey{Namespace: "ns", Name: "g"}).String()
	}
	return evs
}
