package admission

import (
	"k8s.io/apimachinery/pkg/labels"

	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// quotaCheckLocked returns admission's ResourceQuota check (CheckQuota) for
// one pass: a group's minimum must fit every ResourceQuota of its namespace,
// for the resources the quota limits and the group requests. The group's own
// pods already count in the quota's used amounts (quota admission charged them
// at creation), so they are taken out before the group's minimum is added;
// groups admitted earlier in the same pass count too.
func (a *State) quotaCheckLocked() queue.QuotaFunc {
	extra := map[string]resources.List{}
	return func(g queue.Group) (bool, string) {
		u := a.Units[g.Key]
		if u == nil {
			return true, ""
		}
		ns, own := a.unitNamespaceLocked(u), a.unitChargedLocked(u)
		list, err := a.Quotas.ResourceQuotas(ns).List(labels.Everything())
		if err != nil || len(list) == 0 {
			return true, ""
		}
		if ok, msg := queue.FitsQuotas(ns, convert.Quotas(list), g.Request, own, extra[ns]); !ok {
			return false, msg
		}
		extra[ns] = extra[ns].Add(g.Request)
		return true, ""
	}
}

func (a *State) unitNamespaceLocked(u *Unit) string {
	if u.Gang != nil {
		return u.Gang.Key.Namespace
	}
	return u.Pod.Namespace
}

// unitChargedLocked sums the requests of the unit's unfinished pods.
func (a *State) unitChargedLocked(u *Unit) resources.List {
	if u.Gang == nil {
		return convert.PodRequest(u.Pod)
	}
	out := resources.List{}
	for _, m := range u.Gang.Members {
		if !m.State.Phase.Terminal() {
			out.Add(m.Request)
		}
	}
	return out
}
