package cache

// Estimated starts: a head of a queue refused for room gets a reservation
// only when what it waits for declares a run-time limit (timeplan.go).
// Behind pods without one it would have no start to show at all. For those
// heads a second plan, run at most every estimateEvery, lays over the
// release timeline an estimated end for the bound pods without a limit,
// learned from the run times of the pods that finished in their queue
// (runlimit.Estimator), and reserves the heads on it. What it finds is
// shown, as an estimate, and holds no room: admission, backfill and the
// Filter read only the reservations made on declared limits. A plan that
// kept room for a guess would either idle it (the guess too late) or be
// broken by the pod still running (too early); the starvation guard
// already bounds these heads' waits.

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/plan"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// estimateEvery is how often the estimated starts are planned again: each
// plan lays every release out again (O(releases)), and an estimate moves
// little in ten seconds.
const estimateEvery = 10 * time.Second

// estKey names the bound pods without a limit of one queue on one node.
type estKey struct{ node, queue string }

// estRoom is what the bound pods without a limit of one queue hold on one
// node, and the start of the latest of them. The room is expected back as
// one release, when a pod that started at latest would end: later than
// some of them end, never earlier. latest stays when a pod leaves (finding
// the next latest would need the pods), so the estimate errs late.
type estRoom struct {
	req    resources.List
	latest int64
	n      int32
}

// estimates keeps the estimated ends of bound pods without a run-time
// limit and the estimated starts planned on them. Guarded by Cache.mu.
type estimates struct {
	// runTimes learns how long pods run, per queue (learned).
	runTimes *runlimit.Estimator
	room     map[estKey]*estRoom
	// starts are the estimated starts (Unix seconds) of the heads that
	// hold no reservation, as last published.
	starts map[queue.Key]int64
	// planned is when they were last planned (Unix seconds, 0: never),
	// and covered the heads that plan was for, with a start or not.
	planned int64
	covered map[queue.Key]struct{}
}

// bind counts acct, bound without a limit since start, in its node's and
// queue's room. O(1).
func (e *estimates) bind(acct *podAcct, start int64) {
	if acct.node == "" {
		return
	}
	e.add(estKey{acct.node, acct.queue}, acct.req, start)
	acct.unlimited = true
}

func (e *estimates) add(k estKey, req resources.List, start int64) {
	r := e.room[k]
	if r == nil {
		if e.room == nil {
			e.room = map[estKey]*estRoom{}
		}
		r = &estRoom{req: resources.List{}}
		e.room[k] = r
	}
	r.req.Add(req)
	r.latest, r.n = max(r.latest, start), r.n+1
}

// unbind takes acct out of the room bind counted it in. O(1).
func (e *estimates) unbind(acct *podAcct) {
	if !acct.unlimited {
		return
	}
	acct.unlimited = false
	k := estKey{acct.node, acct.queue}
	r := e.room[k]
	if r == nil {
		return
	}
	r.req.Sub(acct.req)
	if r.n--; r.n <= 0 {
		delete(e.room, k)
	}
}

// requeue moves acct's room to queue to, as started at its old queue's
// room's latest start (its own is not kept): later, never earlier. O(1).
func (e *estimates) requeue(acct *podAcct, to string) {
	if !acct.unlimited {
		return
	}
	start := int64(0)
	if r := e.room[estKey{acct.node, acct.queue}]; r != nil {
		start = r.latest
	}
	e.unbind(acct)
	e.add(estKey{acct.node, to}, acct.req, start)
	acct.unlimited = true
}

// learned is the estimator of run times, made on first use.
func (e *estimates) learned() *runlimit.Estimator {
	if e.runTimes == nil {
		e.runTimes = runlimit.NewEstimator(runlimit.Config{})
	}
	return e.runTimes
}

// trackUnlimitedLocked counts acct, bound and without a run-time limit (not
// in a.ends), in the estimated room. O(1).
func (a *admissionState) trackUnlimitedLocked(pod *v1.Pod, acct *podAcct) {
	if !acct.bound {
		return
	}
	if _, limited := a.ends[pod.UID]; limited {
		return
	}
	start := time.Now()
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	a.est.bind(acct, start.Unix())
}

// learnRunLocked learns the run time of pod, which was bound as old and has
// finished or gone: how long its queue's pods run, for the estimates.
// Pods that never started teach nothing. O(log bins).
func (a *admissionState) learnRunLocked(pod *v1.Pod, old *podAcct, now time.Time) {
	if old == nil || !old.bound || pod.Status.StartTime == nil {
		return
	}
	a.est.learned().Observe(old.queue, int64(now.Sub(pod.Status.StartTime.Time).Seconds()))
}

// estimateStarts plans the estimated starts of the heads this pass could
// not reserve for (Hold), at most every estimateEvery: otherwise the last
// plan's stand for the heads it covered. Runs at the end of the pass,
// after the reservations are kept. O(releases + estimated rooms log
// estimated rooms + heads x the plan's search).
func (pp *passPlacement) estimateStarts() {
	e := &pp.adm.est
	heads := pp.tp.unheld[:0]
	for _, k := range pp.tp.unheld {
		if u := pp.adm.units[k]; u != nil && !u.admitted {
			heads = append(heads, k)
		}
	}
	pp.tp.unheld = heads
	for k := range e.starts {
		if !slices.Contains(heads, k) {
			delete(e.starts, k)
		}
	}
	covered := true
	for _, k := range heads {
		_, ok := e.covered[k]
		covered = covered && ok
	}
	now := pp.tp.now
	if len(heads) == 0 || covered && now-e.planned < int64(estimateEvery/time.Second) {
		return
	}
	e.planned = now
	if e.starts == nil {
		e.starts, e.covered = map[queue.Key]int64{}, map[queue.Key]struct{}{}
	}
	clear(e.covered)
	for _, k := range heads {
		e.covered[k] = struct{}{}
	}
	if len(e.room) == 0 {
		clear(e.starts) // nothing to estimate an end for
		return
	}
	p := plan.New(pp.estimatedTimeline(), now, maxReservations)
	for _, t := range pp.feas.timed {
		pp.reserveOn(p, t.key) // the reservations made on declared limits go first
	}
	for _, k := range heads {
		res, ok := pp.reserveOn(p, k)
		if !ok {
			delete(e.starts, k)
			continue
		}
		e.starts[k] = steady(e.starts[k], res.Start, now)
	}
	pp.classKey = queue.Key{} // reserveOn used the class scratch
}

// steady is the estimated start to publish: the new one, unless an earlier
// published one (old, 0 for none) differs from it by less than a minute or
// a tenth of the wait still ahead. Each change rewrites the group's verdict
// and annotation, and an estimate moves by seconds with every pass.
func steady(old, start, now int64) int64 {
	if old == 0 {
		return start
	}
	d := old - start
	if d < 0 {
		d = -d
	}
	if d < 60 || d*10 < old-now {
		return old
	}
	return start
}

// estimatedTimeline is the release timeline with, added, an estimated end
// for each room of bound pods without a limit: when a pod of that queue
// started at the room's latest start is expected to end, given how long
// it has run (runlimit.Estimator.Estimate). While nothing has been
// learned (the estimator's default) a room never comes back. The free
// room now is the pass's working room, the starving heads' nodes held
// out.
func (pp *passPlacement) estimatedTimeline() *plan.Timeline {
	a := pp.adm
	tl := pp.feas.releases.timeline(pp, a.ends)
	r := pp.Free.R
	free := slices.Clone(pp.Free.Free)
	for i, b := range pp.Free.Blocked {
		if b {
			clear(free[i*r : (i+1)*r])
		}
	}
	now := pp.tp.now
	extra := make([]plan.Alloc, 0, len(a.est.room))
	slab := make([]int64, len(a.est.room)*r) // one allocation for every request
	for k, room := range a.est.room {
		i, ok := pp.Index[k.node]
		if !ok {
			continue
		}
		est := a.est.learned().Estimate(k.queue, now-room.latest)
		if est.Basis == runlimit.FromDefault {
			continue // nothing learned yet: a guess of an hour would only mislead
		}
		req := slab[len(extra)*r : (len(extra)+1)*r]
		for name, v := range room.req {
			if j, ok := pp.ResourceIndex[name]; ok {
				req[j] = v
			}
		}
		extra = append(extra, plan.Alloc{Node: int32(i), Request: req, End: plan.Unbounded, EstimatedEnd: room.latest + est.Seconds})
	}
	return tl.With(free, extra)
}

// estimatedStartOf returns the estimated start of unit key, a head with no
// reservation, when one was planned. O(1).
func (a *admissionState) estimatedStartOf(key queue.Key) (time.Time, bool) {
	s, ok := a.est.starts[key]
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(s, 0), true
}
