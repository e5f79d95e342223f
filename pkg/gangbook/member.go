package gangbook

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/resources"
)

type Member struct {
	// Confirmed: our informer has delivered the pod. An unconfirmed member was
	// recorded from the scheduler's copy in Reserve or Permit; if it is then
	// unreserved it is dropped, so a pod deleted mid-cycle leaves no ghost.
	Confirmed bool
	// Implicit: the member is in its group by annotation, not by label,
	// and counted in the cache's implicitBook.
	Implicit bool
	// Released: a gang release rejected the member while it waited in Permit;
	// its coming Unreserve is part of that release, not a new failure.
	Released bool
	// State follows the flags so that the two pack into one word (a
	// gang.Member is five bytes): the member then fits the 80-byte size
	// class, not 96, and a restart allocates one per bound gang member.
	State gang.Member

	Pod          *v1.Pod
	Request      resources.List
	WaitingSince time.Time
	// Task is the member's task (role) in its gang, "" for none
	// (podTask); read once, when the member is added.
	Task string
	// ReservedOn is the node the scheduler reserved for an unbound member
	// (the assumed copy's spec.nodeName in Reserve and Permit); "" when
	// not reserved. A bound member's node is its pod's.
	ReservedOn string
}

// waiting reports whether the member waits for a node: neither placed nor
// finished.
func (m *Member) waiting() bool { return !m.State.Placed() && !m.State.Phase.Terminal() }

// Node is where a placed member holds room, "" when it holds none.
func (m *Member) Node() string {
	switch {
	case !m.State.Placed():
		return ""
	case m.State.Assigned:
		return m.Pod.Spec.NodeName
	default:
		return m.ReservedOn
	}
}

// Waiting reports whether a member counts in its group's pendingReq: it
// can be placed by us and is neither reserved nor bound.
func Waiting(m *Member) bool { return m.State.Reachable() && !m.State.Placed() }
