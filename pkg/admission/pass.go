package admission

import (
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/status"
)

// PassInput is what a pass reads and writes outside the State, all of it
// the cache's and guarded by the lock the caller holds.
type PassInput struct {
	// Groups are the gangs; Dirty collects those whose status must be
	// written again.
	Groups map[gangbook.GroupKey]*gangbook.Group
	Dirty  map[gangbook.GroupKey]struct{}
	// MembersSynced: every gang member has been listed.
	MembersSynced bool
	// Feasible is the per-node room the placement check runs on, Total
	// the cluster's allocatable.
	Feasible *FeasibleState
	Total    resources.List
	// Lead says whether this process leads (only the leader evicts), and
	// Evictions records the evictions in flight.
	Lead      *status.Leadership
	Evictions *EvictionBook
	// Reclaim and Preempt: the profiles run CalderaReclaim, and its
	// preemption within a queue.
	Reclaim, Preempt bool
	// LogGrants: collect each admission for the log (PassResult.Log).
	LogGrants bool
}

// PassResult is what a pass leaves for the caller to do once it has let
// the lock go.
type PassResult struct {
	// Activate are the pods to move to the scheduler's active queue.
	Activate map[string]*v1.Pod
	// Grants are the admissions, when the input asked for them.
	Grants            []Grant
	Admitted, Refused int
}

// PassLocked runs Volcano's enqueue action once: it divides the cluster
// among the queues, admits what fits and notes the decisions for the
// status writer. The caller activates the pods of the result.
func (a *State) PassLocked(in PassInput, now time.Time) PassResult {
	a.returnLapsedLocked(now, in.Groups, in.Dirty, in.MembersSynced)
	// The pods to evict for the kept reservations that are due; the
	// status writer evicts them (OverrunEvictions).
	oi := overrunInput{Adm: a, Groups: in.Groups, Feasible: in.Feasible, Lead: in.Lead, Book: in.Evictions}
	in.Evictions.Overrun.Queue(in.Evictions.Overrun.choose(oi, now))
	a.syncDirtyDemandLocked()
	// Placement first: it finds the admitted singletons no node takes,
	// whose release must show in the usage the shares are divided on.
	pl := in.Feasible.placementLocked(a, in.Total, in.Reclaim, now)
	a.ReleaseUnplaceableLocked(pl)
	// Shares divide what the queues can have: room held by pods outside
	// every queue is no queue's, and counted in it every deserved share
	// would be overstated, so a queue above its real share would never be
	// reclaimed from.
	a.Shares = queue.DivideWithout(a.Tree, in.Total, a.Outside, a.QueueUsageLocked())
	opts := a.admitOptionsLocked(pl, in.Reclaim, in.Preempt)
	res := a.Pending.Admit(a.Shares, queue.Cluster{Allocatable: in.Total, Used: a.Used, PlansWaiting: a.PlanWaiting}, opts, now)
	pl.Finish()
	out := PassResult{Activate: map[string]*v1.Pod{}}
	pl.retryHeldOut(out.Activate)
	for _, o := range res.Admitted {
		u := a.Units[o.Group.Key]
		if u == nil {
			continue
		}
		if in.LogGrants {
			out.Grants = append(out.Grants, Grant{Unit: o.Group.Key, Queue: u.Queue, OnPlan: o.Decision.OnPlan, Lent: o.Decision.Lent})
		}
		a.admitLocked(u, o.Decision, now, out.Activate, in.Dirty)
	}
	for name := range a.Sorting {
		s := a.Sorting[name]
		s.Share = a.Shares.Share(name)
		a.Sorting[name] = s
	}
	maps.Copy(out.Activate, a.refusedExtrasFittingLocked(in.Groups, in.Preempt))
	maps.Copy(out.Activate, a.noteRefusalsLocked(res.Refused))
	// res belongs to the Pending: read it under the lock.
	out.Admitted, out.Refused = len(res.Admitted), len(res.Refused)
	return out
}

// Log logs each admission at V(2), as the scheduler logs each bind: when a
// group was let in, and on what (a reclaim plan, lent room), is what
// explains the evictions that may follow it. Call it without the lock.
func (r PassResult) Log(logger klog.Logger) {
	for _, e := range r.Grants {
		logger.V(2).Info("Admitted", "unit", e.Unit.String(), "queue", e.Queue, "onPlan", e.OnPlan, "lent", e.Lent)
	}
	if r.Admitted > 0 {
		logger.V(3).Info("Admission pass", "admitted", r.Admitted, "refused", r.Refused)
	}
}
