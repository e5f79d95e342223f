package cache

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/status"
)

// ReconcilerOptions configure the status reconciler.
type ReconcilerOptions struct {
	// SyncPeriod is how often changed groups get their status written.
	SyncPeriod time.Duration
}

// MarkAllGroupsDirty implements status.Source.
func (c *Cache) MarkAllGroupsDirty() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.groups {
		c.dirty[k] = struct{}{}
	}
}

// StatusReady implements status.Source: counts would miss members not yet
// listed.
func (c *Cache) StatusReady() bool { return c.membersSynced.fired() }

// RetryGroupStatus implements status.Source.
func (c *Cache) RetryGroupStatus(key types.NamespacedName) {
	c.mu.Lock()
	c.dirty[gangbook.GroupKey{Namespace: key.Namespace, Name: key.Name}] = struct{}{}
	c.mu.Unlock()
}

// GroupStatusWork implements status.Source: the groups that changed since
// the last call, copied out under the lock so that API calls run without
// it. Its cost is proportional to the changed groups, not to all groups.
func (c *Cache) GroupStatusWork(now time.Time) []status.Group {
	c.mu.Lock()
	defer c.mu.Unlock()
	work := make([]status.Group, 0, len(c.dirty))
	for key := range c.dirty {
		g := c.groups[key]
		if g == nil {
			delete(c.dirty, key)
			continue
		}
		if g.HoldsStatusLocked(now) {
			continue // a member may be finishing (unfinishedPodDeleteLocked); stays dirty
		}
		delete(c.dirty, key)
		w := status.Group{Key: key.Named(), Profile: g.ProfileLocked()}
		w.Notice = gang.NoticeOf(key.String(), g.Obj != nil, g.Spec, g.Counts, g.Unschedulable)
		w.Verdict = c.adm.laterVerdictLocked(g, w.Notice)
		g.WaitingWorkLocked(&w)
		if g.Obj == nil && c.implicit.Has(key.Named()) {
			// Its PodGroup is being created (PodGroupsToCreate): no Event
			// tells its members that it is missing.
			w.Notice = gang.Notice{}
		}
		noticeID := w.Notice.Reason + "\x00" + w.Notice.Message
		if w.Notice.Reason == "" || noticeID == g.LastEvent {
			w.Notice = gang.Notice{}
		} else {
			g.LastEvent = noticeID
			if g.Obj == nil {
				for _, m := range g.Members {
					w.Pods = append(w.Pods, m.Pod)
				}
			}
		}
		if g.Obj != nil {
			src := g.Obj.Source
			w.Source, w.Progress = &src, c.adm.progressLocked(g)
		}
		work = append(work, w)
	}
	return work
}

// progressLocked is what g's PodGroup status is made from, in every
// dialect (the writer makes each dialect's status of it). Without queue
// admission every gang counts as admitted, so that a controller that waits
// for admission (Volcano's) may create its pods. A pending gang's Why is
// the verdict as last told, not as the pass has it now: its numbers move
// with every bind in the queue, and a status rewritten with each would be
// a write per change, each waking another pass.
func (a *admissionState) progressLocked(g *gangbook.Group) groupspec.Progress {
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
	if a.on() {
		u := a.units[gangUnitKey(g.Key)]
		p.Admitted = u != nil && u.admitted
		if u != nil && !u.admitted && u.refusal() != "" {
			p.Why = u.refusal()
		}
	}
	return p
}

// laterVerdictLocked is the verdict annotation an admitted gang's
// PodGroup is to carry past admission (status.Group's Verdict, which the
// writer puts where the dialect keeps it): why its members cannot be
// placed, taken out once it has started. Before admission the admission
// writer owns the annotation, so an unadmitted gang (or a released one,
// whose refusal is written there) gets nil.
func (a *admissionState) laterVerdictLocked(g *gangbook.Group, n gang.Notice) *string {
	if g.Obj == nil {
		return nil
	}
	if a.on() {
		if u := a.units[gangUnitKey(g.Key)]; u == nil || !u.admitted {
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
