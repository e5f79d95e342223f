package admission

import (
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// ProgressLocked is what g's PodGroup status is made from, in every
// dialect (the writer makes each dialect's status of it). Without queue
// admission every gang counts as admitted, so that a controller that waits
// for admission (Volcano's) may create its pods. A pending gang's Why is
// the verdict as last told, not as the pass has it now: its numbers move
// with every bind in the queue, and a status rewritten with each would be
// a write per change, each waking another pass.
func (a *State) ProgressLocked(g *gangbook.Group) groupspec.Progress {
	p := groupspec.Progress{
		Phase:        gang.PhaseOf(g.Spec, g.Counts),
		MinMember:    g.Spec.MinMember,
		Members:      g.Counts.Members,
		Placed:       g.Counts.Placed,
		Running:      g.Counts.Running,
		Succeeded:    g.Counts.Succeeded,
		Failed:       g.Counts.Failed,
		FirstAttempt: g.FirstAttempt,
		Admitted:     true,
		Why:          g.Unschedulable,
	}
	if a.On() {
		u := a.Units[GangUnitKey(g.Key)]
		p.Admitted = u != nil && u.Admitted
		if u != nil && !u.Admitted && u.refusal() != "" {
			p.Why = u.refusal()
		}
	}
	return p
}

// LaterVerdictLocked is the verdict annotation an admitted gang's
// PodGroup is to carry past admission (status.Group's Verdict, which the
// writer puts where the dialect keeps it): why its members cannot be
// placed, taken out once it has started. Before admission the admission
// writer owns the annotation, so an unadmitted gang (or a released one,
// whose refusal is written there) gets nil.
func (a *State) LaterVerdictLocked(g *gangbook.Group, n gang.Notice) *string {
	if g.Obj == nil {
		return nil
	}
	if a.On() {
		if u := a.Units[GangUnitKey(g.Key)]; u == nil || !u.Admitted {
			return nil
		}
	}
	switch n.Reason {
	case gang.ReasonScheduled:
		done := ""
		return &done
	case gang.ReasonUnschedulable:
		v := "admitted, but its members cannot be placed: " + n.Message
		return &v
	}
	return nil
}
