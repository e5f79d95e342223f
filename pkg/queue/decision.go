package queue

import (
	"fmt"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// Check names an admission check; a refused group's Decision carries the first
// one it failed.
type Check uint8

// Admission checks, in the order they are evaluated, except that
// CheckPlacement is evaluated before CheckQuota (the quota callback counts
// what it agrees to). Each check's method in checks.go says what it refuses
// and why.
const (
	// CheckNone: admitted, or not evaluated yet.
	CheckNone Check = iota
	// CheckMembers: fewer member pods exist than minMember.
	CheckMembers
	// CheckQueueMissing: the group's queue does not exist.
	CheckQueueMissing
	// CheckQueueBroken: the queue has a tree Problem.
	CheckQueueBroken
	// CheckQueueClosed: the queue is Closed.
	CheckQueueClosed
	// CheckCapability: the queue or an ancestor would exceed its real capability.
	CheckCapability
	// CheckFairness: the queue or an ancestor would exceed its deserved share.
	CheckFairness
	// CheckCluster: the cluster's idle resources (overcommitted) do not cover it.
	CheckCluster
	// CheckQuota: the namespace's ResourceQuota refuses it.
	CheckQuota
	// CheckPlacement: the members cannot be placed together on the
	// nodes' free room (Options.Placement).
	CheckPlacement
	// CheckReserved: the starvation guard holds the queue for the group at its head.
	CheckReserved
	// CheckWaiting: the pass stopped in the queue before reaching the group.
	CheckWaiting
	// CheckReservation: the members fit now, but starting the group now
	// would delay a reservation (Planner): its run-time limit ends after
	// that reservation starts, or it has none.
	CheckReservation
)

var checkNames = [...]string{
	CheckNone:         "None",
	CheckMembers:      "Members",
	CheckQueueMissing: "QueueMissing",
	CheckQueueBroken:  "QueueBroken",
	CheckQueueClosed:  "QueueClosed",
	CheckCapability:   "Capability",
	CheckFairness:     "Fairness",
	CheckCluster:      "Cluster",
	CheckQuota:        "ResourceQuota",
	CheckPlacement:    "Placement",
	CheckReserved:     "Reserved",
	CheckWaiting:      "Waiting",
	CheckReservation:  "Reservation",
}

// String returns the check's name, fit for a metric label or an Event reason suffix.
func (c Check) String() string {
	if int(c) < len(checkNames) {
		return checkNames[c]
	}
	return fmt.Sprintf("Check(%d)", uint8(c))
}

// Decision is the outcome of admission for one group. Its fields keep the
// numbers; Message renders them for users. Building the text only on demand
// keeps the admission pass free of allocations.
type Decision struct {
	// Admitted is true when the group was admitted.
	Admitted bool
	// HeadException: admitted at the head of its queue although its request
	// alone exceeds a deserved share, so the fairness check was waived.
	HeadException bool
	// Lent: admitted on idle room although its queue (or an ancestor) goes
	// above its deserved share: the room is lent (Options.Lend), and reclaim
	// takes it back for a group within its share.
	Lent bool
	// OnPlan: admitted on room that only a reclaim or preemption plan
	// frees (or that the aggregate checks could count only that way); the
	// group depends on that plan being made.
	OnPlan bool
	// Check is the first check the group failed; CheckNone when admitted.
	Check Check
	// Queue is the queue the message is about: the group's own queue, or the
	// ancestor whose limit refused it.
	Queue string
	// Resource is, for CheckCapability, CheckFairness and CheckCluster, the
	// resource that did not fit.
	Resource string
	// Request is the group's request of Resource.
	Request int64
	// Available is what remained of the limit (or, when Permanent, the whole limit).
	Available int64
	// Permanent: the request alone exceeds the limit, so only a spec or cluster
	// change can admit the group; such a group never reserves its queue.
	Permanent bool
	// ClusterBound, for CheckCapability and CheckCluster: the group would
	// fit under every capability its queue and ancestors set themselves
	// for Resource (or they set none), so what binds is the cluster's size
	// (as the tree divides it), which more nodes raise (WaitsForRoom).
	ClusterBound bool
	// Members and MinMember, for CheckMembers; for CheckPlacement, how many
	// members fit and how many must.
	Members, MinMember int32
	// Behind is the key of the group at the head of the queue, for CheckReserved
	// and CheckWaiting; for CheckReservation, the group the reservation is for.
	Behind Key
	// Since is when that group reached the head (CheckReserved); for
	// CheckReservation, when the reservation starts.
	Since time.Time
	// Refused counts the groups the pass refused in the queue before it stopped
	// (CheckWaiting).
	Refused int
	// Detail is the text of a tree Problem (CheckQueueBroken) or of the quota
	// check (CheckQuota).
	Detail string
}

// Message renders the decision for users, e.g.
// "queue team-a: cpu request 3 exceeds remaining capability 1".
func (d Decision) Message() string {
	amt := func(v int64) string { return resources.Format(d.Resource, v) }
	switch d.Check {
	case CheckNone:
		if d.Admitted {
			if d.Lent {
				return fmt.Sprintf("admitted to queue %s on idle room lent beyond its deserved share (reclaimable)", d.Queue)
			}
			if d.HeadException {
				return fmt.Sprintf("admitted to queue %s at its head, although the request exceeds the deserved share", d.Queue)
			}
			return "admitted to queue " + d.Queue
		}
		return "waiting for admission to queue " + d.Queue
	case CheckMembers:
		return fmt.Sprintf("waiting for members: %d/%d", d.Members, d.MinMember)
	case CheckQueueMissing:
		return fmt.Sprintf("queue %s not found", d.Queue)
	case CheckQueueBroken:
		return fmt.Sprintf("queue %s: %s", d.Queue, d.Detail)
	case CheckQueueClosed:
		return fmt.Sprintf("queue %s is closed", d.Queue)
	case CheckCapability:
		if d.Permanent {
			return fmt.Sprintf("queue %s: %s request %s exceeds capability %s", d.Queue, d.Resource, amt(d.Request), amt(d.Available))
		}
		return fmt.Sprintf("queue %s: %s request %s exceeds remaining capability %s", d.Queue, d.Resource, amt(d.Request), amt(d.Available))
	case CheckFairness:
		return fmt.Sprintf("queue %s: %s request %s exceeds remaining deserved share %s", d.Queue, d.Resource, amt(d.Request), amt(d.Available))
	case CheckCluster:
		if d.Permanent {
			return fmt.Sprintf("cluster: %s request %s exceeds total allocatable %s (with overcommit)", d.Resource, amt(d.Request), amt(d.Available))
		}
		return fmt.Sprintf("cluster: %s request %s exceeds idle %s", d.Resource, amt(d.Request), amt(d.Available))
	case CheckQuota:
		if d.Detail == "" {
			return "resource quota exceeded"
		}
		return d.Detail
	case CheckPlacement:
		where := "on the free nodes"
		if d.Detail != "" {
			where = d.Detail
		}
		return fmt.Sprintf("members not placeable: %d/%d fit %s", d.Members, d.MinMember, where)
	case CheckReserved:
		return fmt.Sprintf("queue %s is reserved for %s, at its head since %s", d.Queue, d.Behind, d.Since.UTC().Format(time.RFC3339))
	case CheckReservation:
		return fmt.Sprintf("starting now would delay the reservation of %s from %s (no run-time limit ending before then)", d.Behind, d.Since.UTC().Format(time.RFC3339))
	case CheckWaiting:
		if !d.Behind.IsZero() {
			return fmt.Sprintf("queue %s: waiting behind %s", d.Queue, d.Behind)
		}
		return fmt.Sprintf("queue %s: waiting behind %d groups that could not be admitted", d.Queue, d.Refused)
	}
	return d.Check.String()
}

// WaitsForRoom reports whether more room in the cluster would cure the
// refusal: a capacity refusal (no room in the cluster, members not
// placeable on today's nodes, a capability the cluster's size bounds),
// which a cluster autoscaler exists to cure. Every other refusal (a
// capability the queue sets itself, its deserved share, a closed or
// missing queue, a ResourceQuota, members missing, the queue's order) is a
// quota refusal: no new node admits the group.
func (d Decision) WaitsForRoom() bool {
	switch d.Check {
	case CheckPlacement, CheckReservation:
		return !d.Admitted
	case CheckCapability, CheckCluster:
		return !d.Admitted && d.ClusterBound
	}
	return false
}
