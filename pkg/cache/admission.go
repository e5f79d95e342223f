package cache

import (
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// ChecksResourceQuota reports whether admission reads namespaces'
// ResourceQuotas (admission.Options.CheckResourceQuota), so that the feed
// wires them.
func (c *Cache) ChecksResourceQuota() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.adm.On() && c.adm.Opts.CheckResourceQuota
}

// DefaultQueue returns the queue that takes groups naming none, which the
// command has created (status.EnsureQueue), and whether admission is on.
func (c *Cache) DefaultQueue() (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.adm.On() {
		return "", false
	}
	return c.adm.Opts.DefaultQueue, true
}

// AdmissionLoop returns the loop that runs this cache's admission passes
// (on its kicks and period, once the scheduler's informers and the gang
// members are in: ready, which pkg/feed gives), and false when no profile
// enabled admission. The command runs it: the cache starts no goroutine of
// its own.
func (c *Cache) AdmissionLoop(ready []cache.DoneChecker) (admission.Loop, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.adm.On() {
		return admission.Loop{}, false
	}
	return admission.Loop{
		Pass:   c,
		Period: c.adm.Opts.Period,
		Kicks:  c.adm.Kick,
		Ready:  append(ready, c.membersSynced),
	}, true
}

// AdmissionPass runs Volcano's enqueue action once: it divides the cluster
// among the queues, admits what fits, activates the admitted groups' pods
// and hands decisions to the status writer.
func (c *Cache) AdmissionPass(logger klog.Logger, now time.Time) {
	c.mu.Lock()
	a := c.adm
	a.ReturnLapsedLocked(now, c.groups, c.dirty, c.membersSynced.fired())
	// The pods to evict for the kept reservations that are due; the
	// status writer evicts them (OverrunEvictions).
	in := admission.OverrunInput{Adm: a, Groups: c.groups, Feasible: &c.feasible, Lead: c.lead, Book: &c.evictions}
	c.evictions.Overrun.Queue(c.evictions.Overrun.Choose(in, now))
	c.adm.SyncDirtyDemandLocked()
	// Placement first: it finds the admitted singletons no node takes,
	// whose release must show in the usage the shares are divided on.
	pl := c.feasible.PlacementLocked(a, c.total, c.reclaim, now)
	a.ReleaseUnplaceableLocked(pl)
	// Shares divide what the queues can have: room held by pods outside
	// every queue is no queue's, and counted in it every deserved share
	// would be overstated, so a queue above its real share would never be
	// reclaimed from.
	a.Shares = queue.DivideWithout(a.Tree, c.total, a.Outside, c.adm.QueueUsageLocked())
	opts := a.AdmitOptionsLocked(pl, c.reclaim, c.preempt)
	res := a.Pending.Admit(a.Shares, queue.Cluster{Allocatable: c.total, Used: a.Used, PlansWaiting: a.PlanWaiting}, opts, now)
	pl.Finish()
	act := map[string]*v1.Pod{}
	pl.RetryHeldOut(act)
	// Each admission is logged at V(2), as the scheduler logs each bind:
	// when a group was let in, and on what (a reclaim plan, lent room),
	// is what explains the evictions that may follow it.
	var admittedLog []admission.Grant
	for _, o := range res.Admitted {
		u := a.Units[o.Group.Key]
		if u == nil {
			continue
		}
		if logger.V(2).Enabled() {
			admittedLog = append(admittedLog, admission.Grant{Unit: o.Group.Key, Queue: u.Queue, OnPlan: o.Decision.OnPlan, Lent: o.Decision.Lent})
		}
		a.AdmitLocked(u, o.Decision, now, act, c.dirty)
	}
	for name := range a.Sorting {
		s := a.Sorting[name]
		s.Share = a.Shares.Share(name)
		a.Sorting[name] = s
	}
	maps.Copy(act, a.RefusedExtrasFittingLocked(c.groups, c.preempt))
	maps.Copy(act, c.adm.NoteRefusalsLocked(res.Refused))
	c.metrics.recordQueues(a, c.lead)
	// res belongs to the Pending: read it under the lock.
	nAdmitted, nRefused := len(res.Admitted), len(res.Refused)
	c.mu.Unlock()
	for _, e := range admittedLog {
		logger.V(2).Info("Admitted", "unit", e.Unit.String(), "queue", e.Queue, "onPlan", e.OnPlan, "lent", e.Lent)
	}
	if nAdmitted > 0 {
		logger.V(3).Info("Admission pass", "admitted", nAdmitted, "refused", nRefused)
	}
	c.activate(logger, act)
}

// Admitted answers CalderaEnqueue's PreEnqueue: whether pod's group is
// admitted, else why not.
func (c *Cache) Admitted(pod *v1.Pod) (bool, string) {
	c.markQueueSeen()
	c.mu.RLock()
	defer c.mu.RUnlock()
	ok, msg, _ := c.adm.AdmittedLocked(pod, c.groups)
	return ok, msg
}

// MayEnqueue answers CalderaEnqueue's PreEnqueue: whether pod may enter the
// scheduling queue, else why not. It may when its unit is admitted
// (Admitted) or refused for capacity: then a scheduling cycle marks it
// Unschedulable (PreFilterAwaitingRoom), which autoscalers act on.
func (c *Cache) MayEnqueue(pod *v1.Pod) (bool, string) {
	c.markQueueSeen()
	c.mu.RLock()
	defer c.mu.RUnlock()
	ok, msg, u := c.adm.AdmittedLocked(pod, c.groups)
	if ok || (u != nil && !u.Admitted && u.WaitsForRoom()) {
		return true, ""
	}
	return false, msg
}
