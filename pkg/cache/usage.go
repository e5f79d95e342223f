package cache

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// accountPodLocked accounts an unfinished pod for admission (finished or
// deleted pods are taken out), the accounting side of ApplyPod and
// DeletePod: what nodes hold, per queue and in all, and the singletons
// waiting for admission. pod's GroupKeyOf is gk and labelled. O(1), plus
// the units refused for a capability deficit when a bound pod leaves.
func (c *Cache) accountPodLocked(pod *v1.Pod, gk gangbook.GroupKey, labelled, deleted bool) (act map[string]*v1.Pod) {
	a := c.adm
	c.adm.TrackNominationLocked(pod, deleted)
	finished := pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
	if pod.Spec.NodeName != "" || deleted || finished {
		// Bound (added to allocated below, under the same lock) or gone.
		a.Extras.Drop(pod.UID)
	}
	old := a.Pods[pod.UID]
	if old != nil {
		act = a.UnaccountLocked(pod, old)
	}
	singleton := a.SingletonOfLocked(pod, labelled, old)
	if deleted || finished {
		a.LearnRunLocked(pod, old, time.Now())
		a.TrackEndLocked(pod, nil, nil)
		c.evictions.PodLeft(pod.UID, time.Now()) // its eviction, if any, is over
		if singleton {
			if u := a.Units[admission.PodUnitKey(pod)]; u != nil {
				a.DropUnitLocked(u)
			}
		}
		return act
	}
	// The pod's previous account is rewritten in place: a bind or unbind is
	// then free of allocations (no new account, key or request list).
	acct, oldReq := old, resources.List(nil)
	if acct == nil {
		acct = &admission.PodAcct{}
	} else {
		oldReq = old.Req
	}
	*acct = admission.PodAcct{Req: c.requests.PodRequest(pod, oldReq), Bound: pod.Spec.NodeName != "", Prio: gangbook.PodPriority(pod), Node: pod.Spec.NodeName}
	if labelled && a.Ours(pod) {
		acct.Unit = admission.GangUnitKey(gk)
	} else if singleton {
		acct.Unit = admission.PodUnitKey(pod)
		a.SingletonUnitLocked(pod, acct)
	}
	if u := a.Units[acct.Unit]; u != nil {
		acct.Queue = u.Queue
	} else if !acct.Unit.IsZero() || a.Ours(pod) {
		acct.Queue, acct.Asked = c.adm.ResolveQueueLocked("", pod, pod.Namespace)
		acct.FollowsNS = pod.Labels[qapi.QueueLabel] == ""
	}
	a.Pods[pod.UID] = acct
	a.IndexPodLocked(acct)
	if acct.FollowsNS {
		a.IndexNSLocked(pod.Namespace, pod.UID, acct)
	}
	if acct.Bound {
		c.adm.HoldLocked(acct)
	}
	var group map[string]string
	if labelled {
		group = admission.GroupAnnotations(c.groups[gk])
	}
	c.notices.noteRunLimit(pod, group)
	a.TrackEndLocked(pod, acct, group)
	a.TrackUnlimitedLocked(pod, acct)
	return act
}
