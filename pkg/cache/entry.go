package cache

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// The cache's entry points: what it is fed, one typed call per object
// event. The cache watches nothing itself; pkg/feed wires informers to
// these calls, and tools and tests call them directly, with no API server.
// Each is O(1) per event (see the handler each calls).

// ApplyPod takes an unfinished pod added or updated (old is its previous
// version, nil on an add), as the scheduler's pod informer delivers it:
// gang membership, and with admission every pod's accounting (what nodes
// hold, singletons waiting for admission). Both under one lock, with the
// pod's group worked out once: a restart delivers every bound pod here.
// An update that replaces the pod (a new uid under the name) is the old
// one's delete followed by the new one's add.
func (c *Cache) ApplyPod(logger klog.Logger, old, pod *v1.Pod) {
	key, labelled := gangbook.GroupKeyOf(pod)
	replacedOld := old != nil && replaced(old, pod)
	c.mu.Lock()
	if replacedOld {
		c.unfinishedPodDeleteLocked(old)
	}
	c.requests.Remember(pod) // a member's record and its account sum it once
	act := c.unfinishedPodLocked(pod, key, labelled)
	if c.adm.On() {
		if replacedOld {
			oldKey, oldLabelled := gangbook.GroupKeyOf(old)
			act = withActs(act, c.accountPodLocked(old, oldKey, oldLabelled, true))
		}
		act = withActs(act, c.accountPodLocked(pod, key, labelled, false))
	}
	c.requests.Forget()
	c.mu.Unlock()
	c.activate(logger, act)
}

// DeletePod takes an unfinished pod that left the scheduler's pod
// informer: deleted, or finished (the finished side then delivers it).
func (c *Cache) DeletePod(logger klog.Logger, pod *v1.Pod) {
	key, labelled := gangbook.GroupKeyOf(pod)
	c.mu.Lock()
	c.unfinishedPodDeleteLocked(pod)
	var act map[string]*v1.Pod
	if c.adm.On() {
		act = c.accountPodLocked(pod, key, labelled, true)
	}
	c.mu.Unlock()
	c.activate(logger, act)
}

// withActs adds the pods to activate of more to act, and returns it.
func withActs(act, more map[string]*v1.Pod) map[string]*v1.Pod {
	if act == nil {
		return more
	}
	maps.Copy(act, more)
	return act
}

// ApplyFinishedPod takes a finished gang member (Succeeded, Failed) added
// or updated (old nil on an add); an update that replaces the pod is the
// old one's delete followed by the new one's add.
func (c *Cache) ApplyFinishedPod(logger klog.Logger, old, pod *v1.Pod) {
	if old != nil && replaced(old, pod) {
		c.DeleteFinishedPod(logger, old)
	}
	if pod == nil || !phaseOf(pod).Terminal() {
		// Only a pod without a phase matches both informers' selectors; it
		// is unfinished, so the scheduler's informer's to deliver.
		return
	}
	c.onMember(logger, pod, true)
}

// ApplyNamespace takes a namespace added or updated: its queue label
// names the queue of its pods that name none. Only with admission.
func (c *Cache) ApplyNamespace(ns *v1.Namespace) {
	if ns == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adm.NamespaceQueueLocked(ns.Name, ns.Labels[qapi.QueueLabel], c.dirty, c.membersSynced.fired())
}

// DeleteNamespace takes a namespace deleted: its pods that name no queue
// go to the default queue.
func (c *Cache) DeleteNamespace(ns *v1.Namespace) {
	if ns == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adm.NamespaceQueueLocked(ns.Name, "", c.dirty, c.membersSynced.fired())
}

// ApplyQueue takes a Caldera Queue added or updated. Only with admission.
func (c *Cache) ApplyQueue(q *qapi.Queue) { c.SetQueue(q, false) }

// DeleteQueue takes a Caldera Queue deleted.
func (c *Cache) DeleteQueue(q *qapi.Queue) { c.SetQueue(q, true) }

// QuotasChanged says a namespace's ResourceQuota changed: admission looks
// again at the units it refused (CheckResourceQuota).
func (c *Cache) QuotasChanged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adm.KickLocked()
}

// SetQuotas gives admission what it reads ResourceQuotas from
// (CheckResourceQuota); call it before the first pass.
func (c *Cache) SetQuotas(l corelisters.ResourceQuotaLister) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.adm.On() {
		c.adm.Quotas = l
	}
}
