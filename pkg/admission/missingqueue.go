package admission

import (
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// MissingQueue is the one queue every group and pod that names a queue no
// Queue object has is charged to. Queue names come from labels that any
// tenant may write; keyed by them, the cache's per-queue state and the
// per-queue metric series would grow with every distinct value and never
// shrink. Folded, they cost one bucket (and one label value) however many
// names are used. The name cannot collide with a Queue: it is not a valid
// object name. Each unit and pod account remembers the name it asked for,
// for its messages and for the moment a Queue of that name is created.
const MissingQueue = "(missing)"

// foldQueueLocked returns the queue name to key state by: name itself when
// a Queue of that name exists or it is the default queue (created at
// start-up), else MissingQueue, with name as asked.
func (a *State) foldQueueLocked(name string) (q, asked string) {
	if name == a.Opts.DefaultQueue || a.Queues[name] != nil {
		return name, ""
	}
	return MissingQueue, name
}

// refoldLocked re-resolves, after a Queue named name was created or
// deleted, every unit and every account without a unit that asked for it or
// was charged to it. O(units + pods), on a Queue's creation or deletion
// only: an administrator's action, not a scheduling event. dirty and synced
// are as SyncGangUnitLocked takes them.
func (a *State) refoldLocked(name string, dirty map[gangbook.GroupKey]struct{}, synced bool) {
	for _, u := range a.Units {
		if u.Asked != name && u.Queue != name {
			continue
		}
		if u.Gang != nil {
			a.SyncGangUnitLocked(u.Gang, dirty, synced)
			continue
		}
		q, asked := a.resolveQueueLocked("", u.Pod, u.Pod.Namespace)
		u.Asked = asked
		a.moveUnitLocked(u, q)
		if !u.Admitted {
			a.setPendingLocked(u)
		}
	}
	for _, p := range a.Pods {
		want := a.AskedOf(p)
		if want != name && p.Queue != name {
			continue
		}
		if !p.Unit.IsZero() && a.Units[p.Unit] != nil {
			continue // moved with its unit above
		}
		if want == "" {
			want = p.Queue
		}
		q, asked := a.foldQueueLocked(want)
		a.moveAcctLocked(p, q)
		a.setAskedLocked(p, asked)
	}
	a.KickLocked()
}

// decisionMessage renders d for u, naming the queue u asked for when it
// was folded into MissingQueue.
func (a *State) decisionMessage(u *Unit, d queue.Decision) string {
	if d.Queue == MissingQueue && u.Asked != "" {
		d.Queue = u.Asked
	}
	if d.Check == queue.CheckMembers && u.Gang != nil && u.Gang.OverdueWhy != "" {
		return u.Gang.OverdueWhy
	}
	if t, ok := a.Feas.ReservationOf(u.Key); ok && !d.Admitted {
		return d.Message() + "; " + t.String()
	}
	return d.Message()
}
