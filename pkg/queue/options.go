package queue

import (
	"fmt"
	"math"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// QuotaFunc is the optional namespace quota check (CheckQuota). It is called
// last, only for a group that passed every other check, and a true answer
// admits the group: a callback that tracks namespace usage may count the
// request as used when it answers true. message is shown to users when it
// answers false.
type QuotaFunc func(g Group) (ok bool, message string)

// Options tune an admission pass. The zero value is usable.
type Options struct {
	// OvercommitFactor multiplies the cluster's allocatable in the cluster
	// check (CheckCluster); 0 means 1.0. Values below 1 (or not finite) are
	// invalid: Validate reports them and Admit uses 1.0.
	OvercommitFactor float64
	// StarvationThreshold is how long a group may wait at the head of its
	// queue, refused for room (by the capability, fair-share, cluster or
	// placement check), before it reserves the queue; 0 means
	// DefaultStarvationThreshold, negative disables the guard.
	StarvationThreshold time.Duration
	// Lookahead is how many refused groups a pass looks past in one queue
	// before it stops there; 0 means DefaultLookahead, negative means none
	// (strict head-of-line order).
	Lookahead int
	// Quota is the optional namespace quota check; nil admits every namespace.
	Quota QuotaFunc
	// Reclaim says a reclaim action runs: a group within its queue's deserved
	// share may count, in the cluster check, what reclaimable queues hold
	// above theirs, because reclaim will free it. Without it such a group
	// could never be admitted into a cluster that others fill, and reclaim
	// never starts.
	Reclaim bool
	// Preemptible, when set, says a preemption action runs: it returns what
	// the groups of queue with a priority below priority hold, which
	// preemption can take back for a group of that priority. The capability,
	// fair-share and cluster checks count it as room in the group's queue
	// (and its ancestors, and the cluster). Without it a queue at its share
	// could never admit a higher-priority group, and preemption within a
	// queue never starts. It is called only for a group the plain checks
	// refuse.
	Preemptible func(queue string, priority int32) resources.List
	// Placement, when set, is the placement check (CheckPlacement): the
	// group's members must be placeable on the nodes' free room (see
	// Placement). The starvation guard then also reserves that room for a
	// head group it refuses.
	Placement Placement
	// Lend lends idle room (lend.go): with Reclaim on, a group of a
	// reclaimable queue refused only by the fair-share check is admitted,
	// after every group entitled to room was served, when it fits the
	// cluster's idle room. Its queue then holds more than its deserved share,
	// and reclaim takes the loan back for a group within its share. Without
	// it the pass is strictly fair and may leave room idle. Nothing is lent
	// while a group admitted on a plan's room waits for it (in the same pass,
	// or Cluster.PlansWaiting), since a plan's victims are the youngest pods
	// above their share.
	Lend bool
	// ReservationsPerQueue is how many groups of each queue, refused for
	// room, a Placement that is also a Planner holds reservations for in a
	// pass (Planner.Hold), in queue order; 0 means
	// DefaultReservationsPerQueue, negative means none (admission decides
	// for this instant only).
	ReservationsPerQueue int
}

// DefaultReservationsPerQueue: the head of each queue is reserved for, as
// Slurm's backfill reserves for the job at the head by default.
const DefaultReservationsPerQueue = 1

// Validate reports an unusable option.
func (o Options) Validate() error {
	f := o.OvercommitFactor
	if math.IsNaN(f) || math.IsInf(f, 0) || (f != 0 && f < 1) {
		return fmt.Errorf("overcommitFactor %v: must be at least 1.0", f)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Validate() != nil || o.OvercommitFactor == 0 {
		o.OvercommitFactor = 1
	}
	if o.StarvationThreshold == 0 {
		o.StarvationThreshold = DefaultStarvationThreshold
	}
	if o.ReservationsPerQueue == 0 {
		o.ReservationsPerQueue = DefaultReservationsPerQueue
	}
	switch {
	case o.Lookahead == 0:
		o.Lookahead = DefaultLookahead
	case o.Lookahead < 0:
		o.Lookahead = 0
	}
	return o
}
