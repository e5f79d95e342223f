package cache

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// A gang refused for want of room goes through PreEnqueue, all its
// members at once, and is rejected in PreFilter with its verdict (a
// cycle then marks it Unschedulable); its status writes leave the pods'
// condition to the scheduler. When a node joins it is admitted. A gang
// over its queue's own capability stays out of the scheduling queue.
func TestCapacityRefusalReachesTheScheduler(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("default"), mkQueue("capped", capability("4")))
	c.ApplyNode(logger, mkNode("n1", "8"))
	addPG(c, mkPG("ns", "wide", 4))
	addPG(c, mkPG("ns", "capped", 2, pgQueue("capped")))
	var wide, capped []*v1.Pod
	for i := range 4 {
		p := memberOf("ns", fmt.Sprint("w", i), "wide", cpu("6"))
		wide = append(wide, p)
		podEvent(c, p)
	}
	for i := range 2 {
		p := memberOf("ns", fmt.Sprint("c", i), "capped", cpu("6"))
		capped = append(capped, p)
		podEvent(c, p)
	}
	h.activations()
	pass(c, t0)

	if got, want := activatedPods(h), names(wide...); !slices.Equal(got, want) {
		t.Errorf("activated %v, want the waiting-for-room gang's members %v", got, want)
	}
	for _, p := range wide {
		if ok, msg := c.Admitted(p); ok {
			t.Fatalf("%s admitted on a node of 8 cpu: %s", p.Name, msg)
		}
		if ok, msg := c.MayEnqueue(p); !ok {
			t.Errorf("PreEnqueue holds %s, refused for room: %s", p.Name, msg)
		}
		_, code, msg := c.PreFilter(p, t0)
		if code != admission.PreFilterAwaitingRoom || !strings.HasPrefix(msg, "waiting for room: ") {
			t.Errorf("PreFilter(%s) = %v %q, want PreFilterAwaitingRoom with the verdict", p.Name, code, msg)
		}
	}
	for _, p := range capped {
		if ok, msg := c.MayEnqueue(p); ok || !strings.Contains(msg, "capability") {
			t.Errorf("PreEnqueue lets %s through, refused by its queue's own capability: %v %q", p.Name, ok, msg)
		}
	}
	for _, w := range c.AdmissionWrites() {
		if w.PodGroup == nil {
			continue
		}
		if want := w.PodGroup.Name == "wide"; w.AwaitingRoom != want {
			t.Errorf("write for %s: AwaitingRoom %v, want %v", w.PodGroup.Name, w.AwaitingRoom, want)
		}
	}
	if g := c.groups[key("ns", "wide")]; !g.FirstAttempt.IsZero() {
		t.Errorf("the gang's first attempt was stamped while it waited for room: its timeout would run")
	}

	// Nodes join for it: it is admitted, and no longer waits for room.
	for i := range 3 {
		c.ApplyNode(logger, mkNode(fmt.Sprint("new", i), "8"))
	}
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{true, ""}, wide...)
	if waits, _ := awaitingRoom(c, wide[0]); waits {
		t.Errorf("an admitted gang still waits for room")
	}
}

// Between passes a unit waiting for room keeps the verdict it was told:
// a member event sends it back to be decided afresh (Pending.Set forgets
// the decision), and a cycle then said only "waiting for admission to
// queue default", which stayed in the pods' condition until the next cycle.
func TestAwaitingRoomKeepsTheVerdictBetweenPasses(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
	for i := range 3 {
		c.ApplyNode(logger, mkNode(fmt.Sprint("n", i), "8"))
	}
	addPG(c, mkPG("ns", "wide", 2))
	var wide []*v1.Pod
	for i := range 3 {
		p := memberOf("ns", fmt.Sprint("w", i), "wide", cpu("9"))
		wide = append(wide, p)
		if i < 2 {
			podEvent(c, p)
		}
	}
	pass(c, t0)
	_, told := awaitingRoom(c, wide[0])
	if !strings.Contains(told, "members not placeable") {
		t.Fatalf("verdict %q, want the placement refusal", told)
	}
	podEvent(c, wide[2]) // a third member: decided afresh at the next pass
	waits, msg := awaitingRoom(c, wide[0])
	if !waits || msg != told {
		t.Errorf("between passes AwaitingRoom = %v %q, want the verdict told: %q", waits, msg, told)
	}
}

// A unit waiting for room has its pods in the scheduling queue (PreEnqueue
// let them through for autoscalers). When a later pass refuses it for a
// reason no room cures (here its queue's capability, lowered), PreEnqueue
// no longer lets them in, but pods already queued meet only PreFilter: it
// must hold them as not admitted, or they bind unadmitted, past the
// capability (random harness seed 9404: a queue 4 cpu over its
// capability after a restart).
func TestRefusedForQuotaAfterRoomStaysOut(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"), mkQueue("other"))
	c.ApplyNode(logger, mkNode("n1", "16"))
	podEvent(c, single("ns", "running", inQueue("other"), cpu("10"), boundTo("n1"), phase(v1.PodRunning)))
	addPG(c, mkPG("ns", "wide", 2))
	var pods []*v1.Pod
	for i := range 2 {
		p := memberOf("ns", fmt.Sprint("w", i), "wide", cpu("4"))
		pods = append(pods, p)
		podEvent(c, p)
	}
	solo := single("ns", "solo", cpu("7"))
	pods = append(pods, solo)
	podEvent(c, solo)
	pass(c, t0)
	for _, p := range pods {
		if ok, msg := c.MayEnqueue(p); !ok {
			t.Fatalf("premise: PreEnqueue holds %s, refused for room: %s", p.Name, msg)
		}
	}
	c.SetQueue(mkQueue("default", capability("4")), false)
	pass(c, t0.Add(time.Second))
	for _, p := range pods {
		if ok, msg := c.MayEnqueue(p); ok || !strings.Contains(msg, "capability") {
			t.Fatalf("premise: PreEnqueue lets %s through, refused by its queue's capability: %v %q", p.Name, ok, msg)
		}
		_, code, msg := c.PreFilter(p, t0.Add(time.Second))
		if code != admission.PreFilterNotAdmitted || !strings.Contains(msg, "capability") {
			t.Errorf("PreFilter(%s) = %v %q, want PreFilterNotAdmitted with the verdict", p.Name, code, msg)
		}
	}
}

// A pod of a profile that runs no admission (no CalderaEnqueue: the
// default-scheduler profile of the sole-scheduler configuration) is no
// admission's to hold: PreFilter lets it through, refused or not.
func TestPreFilterLeavesOtherProfilesPods(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
	c.ApplyNode(logger, mkNode("n1", "4"))
	big := single("ns", "big", cpu("8"), notOurs)
	podEvent(c, big)
	pass(c, t0)
	if _, code, msg := c.PreFilter(big, t0); code != admission.PreFilterOK {
		t.Errorf("PreFilter(a pod of another profile) = %v %q, want PreFilterOK", code, msg)
	}
}

// awaitingRoom is AwaitingRoomLocked for pod's unit, under the lock.
func awaitingRoom(c *Cache, pod *v1.Pod) (bool, string) {
	key, member := gangbook.GroupKeyOf(pod)
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.adm.AwaitingRoomLocked(c.adm.UnitOfLocked(pod, key, member))
}
