package cache

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
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
		finishing := g.Finishing != nil
		if g.HoldsStatusLocked(now) {
			continue // a member may be finishing (unfinishedPodDeleteLocked); stays dirty
		}
		if finishing {
			// The members that left unfinished were deleted, not finished:
			// a started gang left with nothing bound is decided again
			// (admission's setInflightLocked), which it waited for.
			c.adm.SyncGangUnitLocked(g, c.dirty, c.membersSynced.fired())
		}
		delete(c.dirty, key)
		w := status.Group{Key: key.Named(), Profile: g.ProfileLocked()}
		w.Notice = noticeOf(g)
		w.Verdict = c.adm.LaterVerdictLocked(g, w.Notice)
		g.WaitingWorkLocked(&w)
		if g.Obj == nil && c.implicit.Has(key.Named()) {
			// Its PodGroup is being created (PodGroupsToCreate): no Event
			// tells its members that it is missing.
			w.Notice = gang.Notice{}
		}
		if id := noticeID(w.Notice); w.Notice.Reason == "" || id == g.LastEvent {
			w.Notice = gang.Notice{}
		} else {
			g.LastEvent = id
			if g.Obj == nil {
				for _, m := range g.Members {
					w.Pods = append(w.Pods, m.Pod)
				}
			}
		}
		if g.Obj != nil {
			src := g.Obj.Source
			w.Source, w.Progress = &src, c.adm.ProgressLocked(g)
		}
		work = append(work, w)
	}
	return work
}

// noticeOf is what g's members or PodGroup are to be told now.
func noticeOf(g *gangbook.Group) gang.Notice {
	return gang.NoticeOf(g.Key.String(), g.Obj != nil, g.Spec, g.Counts, g.Unschedulable)
}

// noticeID identifies a notice in Group.LastEvent: the same notice is
// posted once.
func noticeID(n gang.Notice) string { return n.Reason + "\x00" + n.Message }
