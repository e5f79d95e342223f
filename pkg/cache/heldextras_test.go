package cache

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A started gang's member that holds a node but is not bound yet (reserved,
// waiting in Permit or binding) takes room kube-scheduler's Filter counts:
// admission's placement check must not give that room to another gang.
// Before, it counted only bound pods and admitted gangs' reserved members,
// so a gang of nine 3-cpu members was admitted on nodes where only eight
// fit; its ninth member failed Filter, the gang was released, and another
// gang took its room (random seed 10242: a gang's two members waited in
// Permit on the largest node).
func TestReservedMemberOfStartedGangHoldsItsNode(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	for _, n := range []struct{ name, cpu string }{{"n1", "16"}, {"n2", "8"}, {"n3", "8"}} {
		c.ApplyNode(logger, mkNode(n.name, n.cpu))
	}
	addPG(c, mkPG("ns", "s", 1, pgQueue("q")))
	s0, s1 := memberOf("ns", "s0", "s", cpu("1")), memberOf("ns", "s1", "s", cpu("2"))
	podEvent(c, s0)
	pass(c, t0)
	reserveOn(c, s0, "n2", t0)
	podEvent(c, next(s0, boundTo("n2"), phase(v1.PodRunning)))
	// Started; its next member holds 2 of n1's 16 cpu, unbound: n1 takes
	// four 3-cpu members, not five.
	podEvent(c, s1)
	reserveOn(c, s1, "n1", t0)

	addPG(c, mkPG("ns", "g", 9, pgQueue("q")))
	var g []*v1.Pod
	for i := range 9 {
		p := memberOf("ns", fmt.Sprint("g", i), "g", cpu("3"))
		g = append(g, p)
		podEvent(c, p)
	}
	pass(c, t0.Add(time.Second))
	if v := admitted(c, g[0]); v.ok || !strings.Contains(v.msg, "8/9 fit") {
		t.Fatalf("a gang of nine beside a reserved member: %+v, want refused with 8/9 fitting", v)
	}
	wantConsistent(t, c, "with the member reserved")

	// The member goes: its node's room is free again.
	podDelete(c, s1)
	pass(c, t0.Add(2*time.Second))
	wantAdmitted(t, c, verdict{ok: true}, g...)
}
