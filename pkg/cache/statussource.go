package cache

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/gang"
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
	c.dirty[GroupKey{Namespace: key.Namespace, Name: key.Name}] = struct{}{}
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
		if g.holdsStatusLocked(now) {
			continue // a member may be finishing (unfinishedPodDeleteLocked); stays dirty
		}
		delete(c.dirty, key)
		w := status.Group{Key: key.named(), Profile: g.profileLocked()}
		w.Notice = gang.NoticeOf(key.String(), g.obj != nil, g.spec, g.counts, g.unschedulable)
		w.Verdict = c.adm.laterVerdictLocked(g, w.Notice)
		g.waitingWorkLocked(&w)
		if g.obj == nil && c.implicit.Has(key.named()) {
			// Its PodGroup is being created (PodGroupsToCreate): no Event
			// tells its members that it is missing.
			w.Notice = gang.Notice{}
		}
		noticeID := w.Notice.Reason + "\x00" + w.Notice.Message
		if w.Notice.Reason == "" || noticeID == g.lastEvent {
			w.Notice = gang.Notice{}
		} else {
			g.lastEvent = noticeID
			if g.obj == nil {
				for _, m := range g.members {
					w.Pods = append(w.Pods, m.pod)
				}
			}
		}
		if g.obj != nil {
			src := g.obj.Source
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
func (a *admissionState) progressLocked(g *group) groupspec.Progress {
	p := groupspec.Progress{
		Phase:        gang.PhaseOf(g.spec, g.counts),
		MinMember:    g.spec.MinMember,
		Members:      g.counts.Members,
		Placed:       g.counts.Placed,
		Running:      g.counts.Running,
		Succeeded:    g.counts.Succeeded,
		Failed:       g.counts.Failed,
		FirstAttempt: g.firstAttempt,
		Admitted:     true,
		Why:          g.unschedulable,
	}
	if a.on() {
		u := a.units[gangUnitKey(g.key)]
		p.Admitted = u != nil && u.admitted
		if u != nil && !u.admitted && u.refusal() != "" {
			p.Why = u.refusal()
		}
	}
	return p
}

// waitingWorkLocked adds to w the pods whose condition is to say that the
// gang waits for members or for its PodGroup (w.Notice says whether it
// does), or, once it no longer does, the pods to take that out of. The
// message carries no counts, so a Job creating its pods one by one does
// not rewrite every pod's condition per arrival; the writer skips pods that
// already say it. O(members) for a group that waits or just stopped.
func (g *group) waitingWorkLocked(w *status.Group) {
	switch {
	case w.Notice.Reason == gang.ReasonWaiting && g.obj == nil:
		w.WaitingReason, w.WaitingMessage = status.ReasonWaitingForPodGroup, w.Notice.Message
	case w.Notice.Reason == gang.ReasonWaiting:
		w.WaitingReason = status.ReasonWaitingForMembers
		w.WaitingMessage = fmt.Sprintf("waiting for PodGroup %s to have minMember %d members", g.key, g.spec.MinMember)
	case !g.toldWaiting:
		return
	}
	g.toldWaiting = w.WaitingReason != ""
	w.Waiting = g.waitingPodsLocked()
}

// laterVerdictLocked is the verdict annotation an admitted gang's
// PodGroup is to carry past admission (status.Group's Verdict, which the
// writer puts where the dialect keeps it): why its members cannot be
// placed, taken out once it has started. Before admission the admission
// writer owns the annotation, so an unadmitted gang (or a released one,
// whose refusal is written there) gets nil.
func (a *admissionState) laterVerdictLocked(g *group, n gang.Notice) *string {
	if g.obj == nil {
		return nil
	}
	if a.on() {
		if u := a.units[gangUnitKey(g.key)]; u == nil || !u.admitted {
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
