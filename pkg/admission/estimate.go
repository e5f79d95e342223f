package admission

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

// EstKey names the bound pods without a limit of one queue on one node.
type EstKey struct{ Node, Queue string }

// estRoom is what the bound pods without a limit of one queue hold on one
// node, and the start of the latest of them. The room is expected back as
// one release, when a pod that started at latest would end: later than
// some of them end, never earlier. latest stays when a pod leaves (finding
// the next latest would need the pods), so the estimate errs late.
type estRoom struct {
	Req    resources.List
	Latest int64
	N      int32
}

// Estimates keeps the estimated ends of bound pods without a run-time
// limit and the estimated starts planned on them. Guarded by Cache.mu.
type Estimates struct {
	// runTimes learns how long pods run, per queue (learned).
	runTimes *runlimit.Estimator
	Room     map[EstKey]*estRoom
	// Starts are the estimated starts (Unix seconds) of the heads that
	// hold no reservation, as last published.
	Starts map[queue.Key]int64
	// Planned is when they were last planned (Unix seconds, 0: never),
	// and covered the heads that plan was for, with a start or not.
	Planned int64
	covered map[queue.Key]struct{}
}

// Bind counts acct, bound without a limit since start, in its node's and
// queue's room. O(1).
func (e *Estimates) Bind(acct *PodAcct, start int64) {
	if acct.Node == "" {
		return
	}
	e.add(EstKey{acct.Node, acct.Queue}, acct.Req, start)
	acct.unlimited = true
}

func (e *Estimates) add(k EstKey, req resources.List, start int64) {
	r := e.Room[k]
	if r == nil {
		if e.Room == nil {
			e.Room = map[EstKey]*estRoom{}
		}
		r = &estRoom{Req: resources.List{}}
		e.Room[k] = r
	}
	r.Req.Add(req)
	r.Latest, r.N = max(r.Latest, start), r.N+1
}

// Unbind takes acct out of the room bind counted it in. O(1).
func (e *Estimates) Unbind(acct *PodAcct) {
	if !acct.unlimited {
		return
	}
	acct.unlimited = false
	k := EstKey{acct.Node, acct.Queue}
	r := e.Room[k]
	if r == nil {
		return
	}
	r.Req.Sub(acct.Req)
	if r.N--; r.N <= 0 {
		delete(e.Room, k)
	}
}

// Requeue moves acct's room to queue to, as started at its old queue's
// room's latest start (its own is not kept): later, never earlier. O(1).
func (e *Estimates) Requeue(acct *PodAcct, to string) {
	if !acct.unlimited {
		return
	}
	start := int64(0)
	if r := e.Room[EstKey{acct.Node, acct.Queue}]; r != nil {
		start = r.Latest
	}
	e.Unbind(acct)
	e.add(EstKey{acct.Node, to}, acct.Req, start)
	acct.unlimited = true
}

// Learned is the estimator of run times, made on first use.
func (e *Estimates) Learned() *runlimit.Estimator {
	if e.runTimes == nil {
		e.runTimes = runlimit.NewEstimator(runlimit.Config{})
	}
	return e.runTimes
}

// trackUnlimitedLocked counts acct, bound and without a run-time limit (not
// in a.ends), in the estimated room. O(1).
func (a *State) trackUnlimitedLocked(pod *v1.Pod, acct *PodAcct) {
	if !acct.Bound {
		return
	}
	if _, limited := a.Ends[pod.UID]; limited {
		return
	}
	start := time.Now()
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	a.Est.Bind(acct, start.Unix())
}

// learnRunLocked learns the run time of pod, which was bound as old and has
// finished or gone: how long its queue's pods run, for the estimates.
// Pods that never started teach nothing. O(log bins).
func (a *State) learnRunLocked(pod *v1.Pod, old *PodAcct, now time.Time) {
	if old == nil || !old.Bound || pod.Status.StartTime == nil {
		return
	}
	a.Est.Learned().Observe(old.Queue, int64(now.Sub(pod.Status.StartTime.Time).Seconds()))
}

// estimateStarts plans the estimated starts of the heads this pass could
// not reserve for (Hold), at most every estimateEvery: otherwise the last
// plan's stand for the heads it covered. Runs at the end of the pass,
// after the reservations are kept. O(releases + estimated rooms log
// estimated rooms + heads x the plan's search).
func (pp *passPlacement) estimateStarts() {
	e := &pp.adm.Est
	heads := pp.Tp.Unheld[:0]
	for _, k := range pp.Tp.Unheld {
		if u := pp.adm.Units[k]; u != nil && !u.Admitted {
			heads = append(heads, k)
		}
	}
	pp.Tp.Unheld = heads
	for k := range e.Starts {
		if !slices.Contains(heads, k) {
			delete(e.Starts, k)
		}
	}
	covered := true
	for _, k := range heads {
		_, ok := e.covered[k]
		covered = covered && ok
	}
	now := pp.Tp.now
	if len(heads) == 0 || covered && now-e.Planned < int64(estimateEvery/time.Second) {
		return
	}
	e.Planned = now
	if e.Starts == nil {
		e.Starts, e.covered = map[queue.Key]int64{}, map[queue.Key]struct{}{}
	}
	clear(e.covered)
	for _, k := range heads {
		e.covered[k] = struct{}{}
	}
	if len(e.Room) == 0 {
		clear(e.Starts) // nothing to estimate an end for
		return
	}
	p := plan.New(pp.estimatedTimeline(), now, MaxReservations)
	for _, t := range pp.feas.Timed {
		pp.reserveOn(p, t.Key) // the reservations made on declared limits go first
	}
	for _, k := range heads {
		res, ok := pp.reserveOn(p, k)
		if !ok {
			delete(e.Starts, k)
			continue
		}
		e.Starts[k] = Steady(e.Starts[k], res.Start, now)
	}
	pp.classKey = queue.Key{} // reserveOn used the class scratch
}

// Steady is the estimated start to publish: the new one, unless an earlier
// published one (old, 0 for none) differs from it by less than a minute or
// a tenth of the wait still ahead. Each change rewrites the group's verdict
// and annotation, and an estimate moves by seconds with every pass.
func Steady(old, start, now int64) int64 {
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
	tl := pp.feas.Releases.timeline(pp, a.Ends)
	r := pp.Free.R
	free := slices.Clone(pp.Free.Free)
	for i, b := range pp.Free.Blocked {
		if b {
			clear(free[i*r : (i+1)*r])
		}
	}
	now := pp.Tp.now
	extra := make([]plan.Alloc, 0, len(a.Est.Room))
	slab := make([]int64, len(a.Est.Room)*r) // one allocation for every request
	for k, room := range a.Est.Room {
		i, ok := pp.Index[k.Node]
		if !ok {
			continue
		}
		est := a.Est.Learned().Estimate(k.Queue, now-room.Latest)
		if est.Basis == runlimit.FromDefault {
			continue // nothing learned yet: a guess of an hour would only mislead
		}
		req := slab[len(extra)*r : (len(extra)+1)*r]
		for name, v := range room.Req {
			if j, ok := pp.ResourceIndex[name]; ok {
				req[j] = v
			}
		}
		extra = append(extra, plan.Alloc{Node: int32(i), Request: req, End: plan.Unbounded, EstimatedEnd: room.Latest + est.Seconds})
	}
	return tl.With(free, extra)
}

// EstimatedStartOf returns the estimated start of unit key, a head with no
// reservation, when one was planned. O(1).
func (a *State) EstimatedStartOf(key queue.Key) (time.Time, bool) {
	s, ok := a.Est.Starts[key]
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(s, 0), true
}
