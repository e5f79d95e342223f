package cache

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
func (a *admissionState) foldQueueLocked(name string) (q, asked string) {
	if name == a.opts.DefaultQueue || a.queues[name] != nil {
		return name, ""
	}
	return MissingQueue, name
}

// refoldLocked re-resolves, after a Queue named name was created or
// deleted, every unit and every account without a unit that asked for it or
// was charged to it. O(units + pods), on a Queue's creation or deletion
// only: an administrator's action, not a scheduling event. dirty and synced
// are as syncGangUnitLocked takes them.
func (a *admissionState) refoldLocked(name string, dirty map[gangbook.GroupKey]struct{}, synced bool) {
	for _, u := range a.units {
		if u.asked != name && u.queue != name {
			continue
		}
		if u.gang != nil {
			a.syncGangUnitLocked(u.gang, dirty, synced)
			continue
		}
		q, asked := a.resolveQueueLocked("", u.pod, u.pod.Namespace)
		u.asked = asked
		a.moveUnitLocked(u, q)
		if !u.admitted {
			a.setPendingLocked(u)
		}
	}
	for _, p := range a.pods {
		if p.asked != name && p.queue != name {
			continue
		}
		if !p.unit.IsZero() && a.units[p.unit] != nil {
			continue // moved with its unit above
		}
		want := p.asked
		if want == "" {
			want = p.queue
		}
		q, asked := a.foldQueueLocked(want)
		a.moveAcctLocked(p, q)
		p.asked = asked
	}
	a.kickLocked()
}

// decisionMessage renders d for u, naming the queue u asked for when it
// was folded into MissingQueue.
func (a *admissionState) decisionMessage(u *unit, d queue.Decision) string {
	if d.Queue == MissingQueue && u.asked != "" {
		d.Queue = u.asked
	}
	if d.Check == queue.CheckMembers && u.gang != nil && u.gang.OverdueWhy != "" {
		return u.gang.OverdueWhy
	}
	if t, ok := a.feas.reservationOf(u.key); ok && !d.Admitted {
		return d.Message() + "; " + t.String()
	}
	return d.Message()
}
