package cache

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/gang"
)

// ReconcilerOptions configure the status reconciler.
type ReconcilerOptions struct {
	// SyncPeriod is how often changed groups get their status written.
	SyncPeriod time.Duration
}

// EnableStatus asks for the status reconciler, which Start starts, once per
// cache. Every profile's plugin calls it; a profile that asks for a
// different period is a configuration error, since one process writes
// status one way.
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
	c.starting = append(c.starting, func(context.Context, klog.Logger) error {
		go c.runLeaderReconciler(opts, c.lead)
		return nil
	})
	return nil
}

// runLeaderReconciler writes status while the scheduler is leading, as told by
// lead, each pass bounded by the end of the current leadership so that a write
// cannot outlive it.
func (c *Cache) runLeaderReconciler(opts ReconcilerOptions, lead *Leadership) {
	ctx := c.ctx
	logger := klog.FromContext(ctx).WithName("status")
	select {
	case <-lead.resolved:
	case <-ctx.Done():
		return
	}
	writing := false
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		until, ok := lead.leading(time.Now())
		if !ok {
			if writing {
				logger.Info("Stopped writing PodGroup status: the scheduler is not leading")
				writing = false
			}
			return
		}
		if !writing {
			logger.Info("Writing PodGroup status: the scheduler is leading")
			// The previous leader may have left anything unwritten.
			c.markAllDirty()
			writing = true
		}
		if !until.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, until)
			defer cancel()
		}
		c.SyncStatus(ctx)
	}, opts.SyncPeriod)
}

func (c *Cache) markAllDirty() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.groups {
		c.dirty[k] = struct{}{}
	}
}

// statusWork is what one pass needs to know about one group, copied out under
// the lock so that API calls run without it.
type statusWork struct {
	key    GroupKey
	pg     *v1alpha1.PodGroup
	status v1alpha1.PodGroupStatus
	notice gang.Notice
	// pods receive the notice when the PodGroup does not exist.
	pods []*v1.Pod
	// profile reports the PodGroup's Events (group.profileLocked).
	profile string
}

// SyncStatus writes status and Events for the groups that changed since the
// last pass. Its cost is proportional to the changed groups, not to all groups.
func (c *Cache) SyncStatus(ctx context.Context) {
	if !c.membersSynced.fired() {
		return // counts would miss members not yet listed; dirty stays
	}
	now := time.Now()
	c.mu.Lock()
	work := make([]statusWork, 0, len(c.dirty))
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
		w := statusWork{key: key, pg: g.pg, profile: g.profileLocked()}
		w.notice = gang.NoticeOf(key.String(), g.pg != nil, g.spec, g.counts, g.unschedulable)
		noticeID := w.notice.Reason + "\x00" + w.notice.Message
		if w.notice.Reason == "" || noticeID == g.lastEvent {
			w.notice = gang.Notice{}
		} else {
			g.lastEvent = noticeID
			if g.pg == nil {
				for _, m := range g.members {
					w.pods = append(w.pods, m.pod)
				}
			}
		}
		if g.pg != nil {
			w.status = desiredStatus(g)
		}
		work = append(work, w)
	}
	c.mu.Unlock()

	c.recordGroupMetrics()
	c.writeAdmissions(ctx)
	c.syncQueueStatus(ctx)
	logger := klog.FromContext(ctx)
	for _, w := range work {
		c.emit(w)
		if w.pg == nil || equality.Semantic.DeepEqual(w.pg.Status, w.status) {
			continue
		}
		if err := c.writeStatus(ctx, w); err != nil && !apierrors.IsNotFound(err) {
			statusWriteErrors.WithLabelValues(WritePodGroupStatus).Inc()
			logger.Error(err, "Cannot write PodGroup status; will retry", "podGroup", w.key.String())
			c.mu.Lock()
			c.dirty[w.key] = struct{}{}
			c.mu.Unlock()
		}
	}
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

func (c *Cache) writeStatus(ctx context.Context, w statusWork) error {
	client := c.pgClient.SchedulingV1alpha1().PodGroups(w.key.Namespace)
	pg := w.pg.DeepCopy()
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			latest, err := client.Get(ctx, w.key.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pg = latest
		}
		first = false
		// Only the status we own changes; a ScheduleStartTime someone else set stays.
		status := w.status
		if !pg.Status.ScheduleStartTime.IsZero() {
			status.ScheduleStartTime = pg.Status.ScheduleStartTime
		}
		status.OccupiedBy = pg.Status.OccupiedBy
		pg.Status = status
		_, err := client.UpdateStatus(ctx, pg, metav1.UpdateOptions{})
		return err
	})
}

func (c *Cache) emit(w statusWork) {
	if w.notice.Reason == "" {
		return
	}
	typ := v1.EventTypeNormal
	if w.notice.Warning {
		typ = v1.EventTypeWarning
	}
	if w.pg != nil {
		c.recorder(w.profile).Eventf(PodGroupRef(w.pg), nil, typ, w.notice.Reason, "Scheduling", "%s", w.notice.Message)
		return
	}
	for _, p := range w.pods {
		c.recorder(p.Spec.SchedulerName).Eventf(p, nil, typ, w.notice.Reason, "Scheduling", "%s", w.notice.Message)
	}
}

// PodGroupRef is the Event target for a PodGroup. The scheduler's event scheme
// does not know PodGroups, so the reference is spelled out.
func PodGroupRef(pg *v1alpha1.PodGroup) *v1.ObjectReference {
	return &v1.ObjectReference{
		APIVersion:      v1alpha1.SchemeGroupVersion.String(),
		Kind:            "PodGroup",
		Namespace:       pg.Namespace,
		Name:            pg.Name,
		UID:             pg.UID,
		ResourceVersion: pg.ResourceVersion,
	}
}
