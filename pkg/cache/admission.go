package cache

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/reclaim"
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

// AdmissionPass runs one admission pass (admission.State.PassLocked),
// records the queues' metrics, and activates the admitted groups' pods.
func (c *Cache) AdmissionPass(logger klog.Logger, now time.Time) {
	c.mu.Lock()
	res := c.adm.PassLocked(admission.PassInput{
		Groups: c.groups, Dirty: c.dirty, MembersSynced: c.membersSynced.fired(),
		Feasible: &c.feasible, Total: c.total, Lead: c.lead, Evictions: &c.evictions,
		Reclaim: c.reclaim, Preempt: c.preempt, LogGrants: logger.V(2).Enabled(),
	}, now)
	c.metrics.recordQueues(c.adm, c.lead)
	c.mu.Unlock()
	res.Log(logger)
	c.activate(logger, res.Activate)
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

// ReclaimInput fills what the cache knows for reclaim.Decide
// (admission.State.ReclaimInputLocked), under the read lock. It runs in
// PostFilter, not on a hot path.
func (c *Cache) ReclaimInput(pod *v1.Pod, running []*v1.Pod, leaving func(*v1.Pod) bool) (reclaim.Input, bool, string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.adm.ReclaimInputLocked(c.groups, pod, running, leaving)
}
