package cache

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/convert/upstream"
	"github.com/caldera-sched/caldera/pkg/convert/volcano"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/status"
)

// ReconcilerOptions configure the status reconciler.
type ReconcilerOptions struct {
	// SyncPeriod is how often changed groups get their status written.
	SyncPeriod time.Duration
}

// EnableStatus asks for the status writer (pkg/status), which the command
// starts after the cache (StatusOptions), once per cache. Every profile's
// plugin calls it; a profile that asks for a different period is a
// configuration error, since one process writes status one way.
func (c *Cache) EnableStatus(opts ReconcilerOptions) error {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	switch {
	case c.reconcilerOn && c.reconcilerOpts != opts:
		return fmt.Errorf("status reconciler sync period %v conflicts with %v set by another profile: give every profile the same statusSyncPeriodSeconds", opts.SyncPeriod, c.reconcilerOpts.SyncPeriod)
	case c.reconcilerOn:
		return nil
	case c.started:
		return fmt.Errorf("the status reconciler set up after the cache started: plugins are built before Start")
	}
	c.reconcilerOn, c.reconcilerOpts = true, opts
	return nil
}

// StatusOptions returns what EnableStatus recorded, and whether a profile
// asked for status at all.
func (c *Cache) StatusOptions() (ReconcilerOptions, bool) {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	return c.reconcilerOpts, c.reconcilerOn
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

// RecordGroupMetrics implements status.Source.
func (c *Cache) RecordGroupMetrics() { c.recordGroupMetrics() }

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
			continue // a member may be finishing (onUnfinishedPodDelete); stays dirty
		}
		delete(c.dirty, key)
		w := status.Group{Key: key.named(), PodGroup: g.pg, Profile: g.profileLocked()}
		w.Notice = gang.NoticeOf(key.String(), g.pg != nil, g.spec, g.counts, g.unschedulable)
		w.Verdict = c.laterVerdictLocked(g, w.Notice)
		g.waitingWorkLocked(&w)
		if g.pg == nil && c.implicit.groups[key] != nil {
			// Its PodGroup is being created (PodGroupsToCreate): no Event
			// tells its members that it is missing.
			w.Notice = gang.Notice{}
		}
		noticeID := w.Notice.Reason + "\x00" + w.Notice.Message
		if w.Notice.Reason == "" || noticeID == g.lastEvent {
			w.Notice = gang.Notice{}
		} else {
			g.lastEvent = noticeID
			if g.pg == nil {
				for _, m := range g.members {
					w.Pods = append(w.Pods, m.pod)
				}
			}
		}
		switch {
		case volcano.IsVolcano(g.pg):
			w.Volcano = c.volcanoProgressLocked(g)
		case upstream.IsUpstream(g.pg):
			w.Upstream = c.upstreamProgressLocked(g)
		case g.pg != nil:
			w.Status = desiredStatus(g)
		}
		work = append(work, w)
	}
	return work
}

func desiredStatus(g *group) v1alpha1.PodGroupStatus {
	s := *g.pg.Status.DeepCopy()
	s.Phase = v1alpha1.PodGroupPhase(gang.PhaseOf(g.spec, g.counts))
	s.Running = int32(g.counts.Running)
	s.Succeeded = int32(g.counts.Succeeded)
	s.Failed = int32(g.counts.Failed)
	if s.ScheduleStartTime.IsZero() && !g.firstAttempt.IsZero() {
		// The API stores seconds; truncating keeps the next comparison equal.
		s.ScheduleStartTime = metav1.NewTime(g.firstAttempt.Truncate(time.Second))
	}
	return s
}

// waitingWorkLocked adds to w the pods whose condition is to say that the
// gang waits for members or for its PodGroup (w.Notice says whether it
// does), or, once it no longer does, the pods to take that out of. The
// message carries no counts, so a Job creating its pods one by one does
// not rewrite every pod's condition per arrival; the writer skips pods that
// already say it. O(members) for a group that waits or just stopped.
func (g *group) waitingWorkLocked(w *status.Group) {
	switch {
	case w.Notice.Reason == gang.ReasonWaiting && g.pg == nil:
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
// scheduler-plugins PodGroup is to carry past admission (status.Group's
// Verdict): why its members cannot be placed, taken out once it has
// started. Before admission the admission writer owns the annotation, so
// an unadmitted gang (or a released one, whose refusal is written there)
// gets nil.
func (c *Cache) laterVerdictLocked(g *group, n gang.Notice) *string {
	if g.pg == nil || volcano.IsVolcano(g.pg) || upstream.IsUpstream(g.pg) {
		return nil
	}
	if a := c.adm; a.on() {
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
