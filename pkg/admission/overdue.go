package admission

import (
	"fmt"
	"time"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// Gangs whose members are created only after admission (latemembers.go)
// are admitted on a promise: that their controller creates minMember pods
// this scheduler can place. A promise can fail: the pods name a scheduler
// no profile serves, a ResourceQuota lets the controller create only some,
// the controller is down. Kept, the admission would hold the queue's room
// forever with nothing to say why. So an admitted gang that has not
// started and lacks minMember members Caldera can place for OverdueGrace
// goes back to pending, its promise withdrawn and the reason in its
// verdict; after another OverdueGrace the promise is given again (the
// controller may have been waiting for room, or for the quota), and the
// gang may be admitted again if it fits.

// OverdueGrace is how long an admitted gang may wait for its controller's
// pods, and how long its promise stays withdrawn once that passed:
// Volcano's controller creates a job's pods within a second of Inqueue.
const OverdueGrace = 30 * time.Second

// overdueState is, per gang unit, when it began waiting for members past
// its admission (zero: the next pass starts the clock), and per gang
// whose promise is withdrawn, until when.
type overdueState struct {
	waiting   map[queue.Key]time.Time
	withdrawn map[gangbook.GroupKey]time.Time
}

// lacksMembers reports whether g, admitted on a promise, lacks minMember
// members Caldera can place.
func lacksMembers(g *gangbook.Group) bool {
	return g.MembersAfterAdmission() && int32(g.Counts.Reachable()) < g.Spec.MinMember
}

// Track starts or stops watching u's gang g for members past its
// admission; synced says the scheduler's pod informer has delivered its
// first list (before that the members may simply not have arrived). O(1).
func (o *overdueState) Track(g *gangbook.Group, u *Unit, synced bool) {
	if u == nil || !u.Admitted || u.Started || !lacksMembers(g) || !synced {
		if u != nil {
			delete(o.waiting, u.Key)
		}
		return
	}
	if _, ok := o.waiting[u.Key]; !ok {
		if o.waiting == nil {
			o.waiting = map[queue.Key]time.Time{}
		}
		o.waiting[u.Key] = time.Time{}
	}
}

// due, at now, withdraws the promise of the gangs that waited for their
// members OverdueGrace past admission (withdraw: to return to pending, why
// in their overdueWhy) and gives back the promises withdrawn OverdueGrace
// ago (restore: to decide again). units and groups are the admission
// units and the groups by key. O(gangs watched).
func (o *overdueState) due(now time.Time, units map[queue.Key]*Unit, groups map[gangbook.GroupKey]*gangbook.Group) (withdraw, restore []*gangbook.Group) {
	for key, since := range o.waiting {
		u := units[key]
		switch {
		case u == nil || u.Gang == nil || !u.Admitted || u.Started || !lacksMembers(u.Gang):
			delete(o.waiting, key)
		case since.IsZero():
			o.waiting[key] = now
		case now.Sub(since) >= OverdueGrace:
			delete(o.waiting, key)
			g := u.Gang
			g.OverdueWhy = overdueReason(g)
			if o.withdrawn == nil {
				o.withdrawn = map[gangbook.GroupKey]time.Time{}
			}
			o.withdrawn[g.Key] = now.Add(OverdueGrace)
			withdraw = append(withdraw, g)
		}
	}
	for k, until := range o.withdrawn {
		g := groups[k]
		switch {
		case g == nil || g.OverdueWhy == "":
			delete(o.withdrawn, k)
		case now.Before(until) && lacksMembers(g):
		default:
			// Time is up, or the members came: the promise is given
			// again, and the gang is decided again.
			delete(o.withdrawn, k)
			g.OverdueWhy = ""
			restore = append(restore, g)
		}
	}
	return withdraw, restore
}

// returnLapsedLocked, at the start of an admission pass at now, returns to
// pending the admitted gangs short of members for ShortGrace (short.go)
// or waiting for them OverdueGrace past admission, and decides again
// those whose withdrawn promise is given back. The caller holds the
// cache's lock; groups are the cache's groups by key, dirty and synced as
// SyncGangUnitLocked takes them.
func (a *State) returnLapsedLocked(now time.Time, groups map[gangbook.GroupKey]*gangbook.Group, dirty map[gangbook.GroupKey]struct{}, synced bool) {
	for _, g := range a.Short.due(now, a.Units) {
		a.UnadmitLocked(g, dirty)
	}
	withdraw, restore := a.Overdue.due(now, a.Units, groups)
	for _, g := range withdraw {
		a.UnadmitLocked(g, dirty)
		a.SyncGangUnitLocked(g, dirty, synced)
	}
	for _, g := range restore {
		a.SyncGangUnitLocked(g, dirty, synced)
	}
}

// overdueReason says why g's members did not reach Caldera: the scheduler
// its unplaceable pods name, when one names a scheduler no profile here
// serves; else how many exist. O(members), once per withdrawal.
func overdueReason(g *gangbook.Group) string {
	for _, m := range g.Members {
		// Unreachable without scheduling gates: no profile here reserves
		// for its scheduler name (reachableLocked).
		if m.State.Unreachable && !m.State.Phase.Terminal() && len(m.Pod.Spec.SchedulingGates) == 0 {
			return fmt.Sprintf("PodGroup %s was admitted, but its pods name scheduler %q, which no profile of this scheduler serves: it waits for pods Caldera can place",
				g.Key, m.Pod.Spec.SchedulerName)
		}
	}
	return fmt.Sprintf("PodGroup %s was admitted, but only %d of its minMember %d pods reached this scheduler within %v: it waits for its controller to create them",
		g.Key, g.Counts.Reachable(), g.Spec.MinMember, OverdueGrace)
}
