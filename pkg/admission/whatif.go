package admission

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// UnitView is what the last admission pass decided for one unit (a
// gang, or a pod outside any gang): what `kubectl caldera what-if` reports
// after running a pass on a snapshot.
type UnitView struct {
	// Unit is the unit's key: pg:NAMESPACE/NAME or pod:NAMESPACE/NAME.
	Unit string `json:"unit"`
	// Queue is the queue the unit waits in.
	Queue string `json:"queue"`
	// Gated: the unit needs admission at all (false for pods of a profile
	// without CalderaEnqueue, or singletons when singletons bypass queues).
	Gated bool `json:"gated"`
	// Admitted: the pass admitted it (or it was admitted before).
	Admitted bool `json:"admitted"`
	// OnPlan: admitted on room that only a reclaim or preemption plan frees.
	OnPlan bool `json:"onPlan,omitempty"`
	// Check names the first admission check the unit failed ("" when
	// admitted, or not evaluated).
	Check string `json:"check,omitempty"`
	// Message is the verdict the scheduler would write.
	Message string `json:"message"`
	// Request is the unit's minimum request (the gang's minimum, or the
	// pod's request), in the cache's units (milli-units for cpu).
	Request resources.List `json:"request,omitempty"`
	// ExpectedStart and ReservedNodes are the unit's reservation, when the
	// pass holds one for it: when and where its members are planned to
	// start.
	ExpectedStart *time.Time `json:"expectedStart,omitempty"`
	ReservedNodes []string   `json:"reservedNodes,omitempty"`
	// EstimatedStart is, for a head without a reservation because pods it
	// waits for declare no run-time limit, when it is expected to start if
	// they end as their queues' recent pods did: an estimate.
	EstimatedStart *time.Time `json:"estimatedStart,omitempty"`
}

// AdmissionOfLocked is AdmissionOf; groups are the cache's groups by key.
func (a *State) AdmissionOfLocked(pod *v1.Pod, groups map[gangbook.GroupKey]*gangbook.Group) (UnitView, bool) {
	if !a.On() || !a.Ours(pod) {
		return UnitView{Message: "not gated by queue admission: profile " + pod.Spec.SchedulerName + " runs no CalderaEnqueue"}, true
	}
	key, labelled := gangbook.GroupKeyOf(pod)
	var uk queue.Key
	if labelled {
		g := groups[key]
		if g == nil {
			return UnitView{}, false
		}
		if g.Obj == nil {
			return UnitView{Unit: GangUnitKey(key).String(), Message: "waiting for its PodGroup"}, true
		}
		uk = GangUnitKey(key)
	} else {
		if !a.Opts.AdmitSingletons {
			return UnitView{Unit: PodUnitKey(pod).String(), Message: "not gated: pods outside gangs bypass queue admission"}, true
		}
		uk = PodUnitKey(pod)
	}
	u := a.Units[uk]
	if u == nil {
		return UnitView{}, false
	}
	v := UnitView{Unit: uk.String(), Queue: u.Queue, Gated: true, Admitted: u.Admitted, OnPlan: u.OnPlan}
	if u.Asked != "" {
		v.Queue = u.Asked
	}
	v.Request = u.Request.Clone()
	switch d, ok := a.Pending.Decision(uk); {
	case u.Admitted:
		v.Message = "admitted to queue " + v.Queue
	case ok:
		v.Message = a.decisionMessage(u, d)
		if d.Check != queue.CheckNone {
			v.Check = d.Check.String()
		}
	default:
		v.Message = "waiting for admission"
	}
	if t, ok := a.Feas.ReservationOf(uk); ok && !u.Admitted {
		at := time.Unix(t.Start, 0).UTC()
		v.ExpectedStart, v.ReservedNodes = &at, slices.Clone(t.Nodes)
	} else if at, ok := a.EstimatedStartOf(uk); ok && !u.Admitted {
		at = at.UTC()
		v.EstimatedStart = &at
	}
	return v, true
}
