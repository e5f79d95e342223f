package random_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// The safety invariants, checked by a watch for the whole run: a pod
// informer on the seed's namespace (every binding and deletion is seen, in
// etcd's order) and a check of the whole model every checkPeriod.

const (
	checkPeriod = 200 * time.Millisecond
	// partialSlack is what a gang may stay partially bound beyond its
	// schedule timeout (the "timeout + 5 s"): bindings of a released
	// gang are in flight, status and informers lag.
	partialSlack = 5 * time.Second
	// restartSlack is added when a scheduler restart overlaps the window: a
	// SIGKILL can land between a gang's bindings, and the new process needs
	// a few seconds to start, sync its informers and retry the rest.
	restartSlack = 10 * time.Second
	// thrashQuiet is how long every queue must have been at or under its
	// deserved share before an eviction counts as thrash: the scheduler
	// decides on its cache, which may lag the watch by a moment (a
	// completion that brought the last queue under its share, say).
	thrashQuiet = 3 * time.Second
)

type gangTrack struct {
	started      bool      // bound members reached minMember at some point
	partialSince time.Time // zero unless 0 < bound < minMember before the start
}

type eviction struct {
	pod   *v1.Pod
	at    time.Time
	under time.Time // allUnderSince at the last check before the eviction
}

type watcher struct {
	r        *run
	podStore toolscache.Store

	mu            sync.Mutex
	gangs         map[string]*gangTrack
	deletions     map[string]bool // UIDs whose deletion was seen
	evictions     []eviction
	lastBind      time.Time
	allUnderSince time.Time
	// boundSince is the cpu bound per queue (subtree) since the last check:
	// a bind between two checks can take a queue over its share, and an
	// eviction that follows it within the same period must be judged on
	// that, not on the last check's holdings.
	boundSince map[string]int64
	last       *snapshot // the model at the last check
	lastViews  map[string]queueView
	// pendingSeen is, per queue and priority, when a pending pod of that
	// priority was last seen in it (by the informer, so a preemptor that
	// arrived and was placed between two checks is not missed).
	pendingSeen map[string]map[int32]time.Time

	// The reservation checks (reservations_test.go): a track per PodGroup
	// UID with a reservation, the times earlier reservations were visible,
	// and when a pending singleton fitted no node (it may hold an
	// unseen reservation).
	resv         map[string]*resvTrack
	suspects     []suspect
	spans        []span
	unfitSingles []span
	unfitOpen    bool
	// reservingSeen is the last check at which a reservation existed or
	// may have (liveness_test.go holds no group to "fits, so binds" then).
	reservingSeen time.Time
}

// startWatcher starts the pod informer and the check loop; both stop with ctx.
func startWatcher(ctx context.Context, r *run) (*watcher, <-chan struct{}) {
	w := &watcher{r: r, gangs: map[string]*gangTrack{}, deletions: map[string]bool{}, pendingSeen: map[string]map[int32]time.Time{}, resv: map[string]*resvTrack{}}
	factory := informers.NewSharedInformerFactoryWithOptions(r.env.Client, 0, informers.WithNamespace(r.ns))
	inf := factory.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.seePending(obj.(*v1.Pod)) },
		UpdateFunc: func(oldObj, newObj any) {
			old, cur := oldObj.(*v1.Pod), newObj.(*v1.Pod)
			w.seePending(old)
			if old.Spec.NodeName == "" && cur.Spec.NodeName != "" {
				now := time.Now()
				w.mu.Lock()
				w.lastBind = now
				w.seeBind(cur)
				w.mu.Unlock()
				r.mu.Lock()
				r.binds = append(r.binds, happening{at: now, group: cur.Labels[groupLabel], node: cur.Spec.NodeName, what: cur.Name + " -> " + cur.Spec.NodeName})
				r.mu.Unlock()
				r.trace.logf("  bound %s -> %s", cur.Name, cur.Spec.NodeName)
				r.runner.bound(ctx, cur, now)
			}
			if !finished(old) && finished(cur) && cur.Spec.NodeName != "" {
				r.runner.finished(cur.UID, time.Now())
				r.happened(happening{at: time.Now(), kind: hFreed, group: cur.Labels[groupLabel], queue: queueOf(cur), prio: prioOf(cur), what: cur.Name + " " + strings.ToLower(string(cur.Status.Phase))})
			}
			if old.DeletionTimestamp == nil && cur.DeletionTimestamp != nil {
				w.deleted(cur)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if p, ok := obj.(*v1.Pod); ok {
				w.deleted(p)
			}
		},
	})
	w.podStore = inf.GetStore()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(checkPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w.check(ctx)
			}
		}
	}()
	return w, done
}

func (w *watcher) seePending(p *v1.Pod) {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	q := queueOf(p)
	if w.pendingSeen[q] == nil {
		w.pendingSeen[q] = map[int32]time.Time{}
	}
	w.pendingSeen[q][prioOf(p)] = time.Now()
}

// deleted notes a pod's deletion; one the generator did not ask for is an
// eviction (the scheduler's reclaim or preemption: nothing else deletes).
func (w *watcher) deleted(p *v1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deletions[string(p.UID)] {
		return
	}
	w.deletions[string(p.UID)] = true
	now := time.Now()
	w.r.runner.finished(p.UID, now)
	h := happening{at: now, kind: hFreed, group: p.Labels[groupLabel], queue: queueOf(p), prio: prioOf(p), what: p.Name + " deleted"}
	if w.r.generatorDeleted(p) {
		if p.Spec.NodeName != "" && !finished(p) {
			w.r.happened(h)
		}
		return
	}
	h.kind, h.what = hEvicted, p.Name+" evicted"
	w.r.happened(h)
	w.evictions = append(w.evictions, eviction{pod: p, at: now, under: w.allUnderSince})
	w.r.trace.logf("  evicted %s (queue %s, priority %d, node %q)", p.Name, queueOf(p), prioOf(p), p.Spec.NodeName)
}

// snapshot builds the model from the informer's pods and fresh lists of the
// rest (PodGroups, nodes and queues change rarely and are small).
func (w *watcher) snapshot(ctx context.Context) (*snapshot, error) {
	r := w.r
	var pods []*v1.Pod
	for _, o := range w.podStore.List() {
		pods = append(pods, o.(*v1.Pod))
	}
	pgs, err := r.env.PGClient.SchedulingV1alpha1().PodGroups(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	nodes, err := r.env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	queues, err := r.env.QueueClient().SchedulingV1alpha1().Queues().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var ns []*v1.Node
	for i := range nodes.Items {
		ns = append(ns, &nodes.Items[i])
	}
	gs := make([]*v1alpha1.PodGroup, 0, len(pgs.Items))
	for i := range pgs.Items {
		gs = append(gs, &pgs.Items[i])
	}
	r.collectGarbage(ctx, gs)
	return newSnapshot(ns, r.nodeNames, pods, gs, queues.Items), nil
}

func (w *watcher) check(ctx context.Context) {
	s, err := w.snapshot(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.r.trace.logf("  watch: %v", err)
		}
		return
	}
	now := time.Now()
	tr := w.r.trace
	views := s.queueViews()

	// No node holds more than its allocatable: terminating pods count, as
	// they do for upstream's NodeResourcesFit.
	for _, n := range s.Nodes {
		if n.Used > n.Alloc {
			tr.fail("node-allocatable", n.Name, "node %s holds %dm cpu of %dm allocatable: %s", n.Name, n.Used, n.Alloc, podsOn(s, n.Name))
		}
	}
	// No queue's bound requests exceed its capability; a parent's counts its
	// children's pods. Rule: pods with a deletionTimestamp are left out (a
	// victim on its way out while its replacement binds is a moment of
	// double-counting no scheduler can avoid, and the kubelet stand-in ends it
	// within milliseconds); finished pods hold nothing.
	holding := s.subtree(s.queueHolding())
	for _, q := range s.Queues {
		c, ok := q.Spec.Capability[v1.ResourceCPU]
		if ok && holding[q.Name] > c.MilliValue() {
			tr.fail("queue-capability", q.Name, "queue %s (parent %q) holds %dm cpu, capability %dm", q.Name, q.Spec.Parent, holding[q.Name], c.MilliValue())
		}
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range s.Pods {
		if p.pending() {
			if w.pendingSeen[p.Queue] == nil {
				w.pendingSeen[p.Queue] = map[int32]time.Time{}
			}
			w.pendingSeen[p.Queue][p.Priority] = now
		}
	}
	// No gang stays partially bound (0 < bound < minMember) past its
	// timeout + 5 s before it started. A gang that reached minMember bound
	// once has started: completions and evictions may shrink it later. The
	// clock runs only while enough unfinished members exist: one the
	// generator deleted cannot be replaced, and a bound pod cannot be
	// unbound.
	for _, g := range s.Groups {
		if !g.Gang {
			continue
		}
		gt := w.gangs[g.UID]
		if gt == nil {
			gt = &gangTrack{}
			w.gangs[g.UID] = gt
		}
		bound := g.count(func(p *podState) bool { return p.Node != "" })
		if bound >= g.MinMember {
			gt.started = true
		}
		members := g.count(func(p *podState) bool { return !p.Finished && !p.Terminating && !p.Gated })
		if gt.started || bound == 0 || members < g.MinMember {
			gt.partialSince = time.Time{}
			continue
		}
		if gt.partialSince.IsZero() {
			gt.partialSince = now
		}
		limit := time.Duration(g.Timeout)*time.Second + partialSlack
		if w.r.restartedWithin(gt.partialSince, now) {
			limit += restartSlack
		}
		if now.Sub(gt.partialSince) > limit {
			tr.fail("partial-gang", g.Name, "gang %s has %d/%d members bound (minMember %d, timeout %ds) for %v: %s",
				g.Name, bound, len(g.Pods), g.MinMember, g.Timeout, now.Sub(gt.partialSince).Round(time.Millisecond), groupLine(g))
		}
	}

	// No thrash: no eviction once every queue has been at or under its
	// deserved share (the lower estimate, see snapshot.shares) for
	// thrashQuiet, unless it is a preemption: the victim's queue has a
	// pending eligible group of higher priority than the victim. New
	// demand within thrashQuiet before the eviction moves the shares (a
	// submitted group makes its queue's share grow and others' shrink,
	// which reclaim then acts on) before a snapshot can show it.
	for _, ev := range w.evictions {
		if ev.under.IsZero() || ev.at.Sub(ev.under) < thrashQuiet || w.last == nil {
			continue
		}
		if w.r.demandWithin(ev.at.Add(-thrashQuiet), ev.at) {
			continue
		}
		if w.preemptible(ev) {
			continue
		}
		tr.fail("no-thrash", ev.pod.Name, "%s (queue %s, priority %d) evicted while every queue had been at or under its deserved share for %v: %s",
			ev.pod.Name, queueOf(ev.pod), prioOf(ev.pod), ev.at.Sub(ev.under).Round(time.Millisecond), sharesLine(w.lastViews))
	}
	w.evictions = nil
	under := true
	for _, v := range views {
		if v.Holding > v.DeservedLo {
			under = false
		}
	}
	switch {
	case !under:
		w.allUnderSince = time.Time{}
	case w.allUnderSince.IsZero():
		w.allUnderSince = now
	}
	w.last, w.lastViews, w.boundSince = s, views, nil

	w.r.runner.noteOverruns(now)
	w.checkReservations(s, now)
	unfit := false
	for _, g := range s.Groups {
		if mayReserve(s, g) {
			unfit = true
		}
	}
	switch {
	case unfit && w.unfitOpen:
		w.unfitSingles[len(w.unfitSingles)-1].to = now
	case unfit:
		w.unfitSingles = append(w.unfitSingles, span{from: now, to: now})
	}
	w.unfitOpen = unfit
	reserving := unfit && w.r.runner.boundAlive()
	for _, pg := range s.PGs {
		if !pg.ETA.IsZero() {
			reserving = true
		}
	}
	if reserving {
		w.reservingSeen = now
	}
}

// lastReserving is the last check at which a reservation existed or may
// have.
func (w *watcher) lastReserving() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reservingSeen
}

// mayReserve says whether singleton g may hold a reservation the harness
// cannot see (a singleton has no PodGroup to carry one): it is pending,
// fits no node's free room now, and fits one once the pods with a limit
// there have ended.
func mayReserve(s *snapshot, g *groupState) bool {
	if g.Gang || g.count((*podState).pending) == 0 {
		return false
	}
	cpu := g.memberCPU()
	if fitsNodes(s, g, 1, cpu) {
		return false
	}
	forever := map[string]int64{}
	for _, p := range s.Pods {
		if p.alive() && !p.Bounded {
			forever[p.Node] += p.CPU
		}
	}
	for _, n := range s.Nodes {
		if matches(g.selector(), n) && n.Alloc-forever[n.Name] >= cpu {
			return true
		}
	}
	return false
}

func finished(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// preemptible says whether the victim's queue had a pending pod of higher
// priority within thrashQuiet before the eviction (or since): the one case
// an eviction within fair shares is right. Rule: any such pod counts, even
// one whose gang is not yet complete; the check gives the scheduler the
// benefit of the doubt about which preemptor it served.
// seeBind adds a bound pod's cpu to its queue and the queue's ancestors;
// once that takes one over its deserved share (by the last check's
// estimate), the cluster is no longer known to be all under its shares.
// The caller holds w.mu.
func (w *watcher) seeBind(p *v1.Pod) {
	if w.last == nil {
		return
	}
	var cpu int64
	for _, c := range p.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
	}
	if w.boundSince == nil {
		w.boundSince = map[string]int64{}
	}
	parent := map[string]string{}
	for _, q := range w.last.Queues {
		parent[q.Name] = q.Spec.Parent
	}
	seen := map[string]bool{}
	for q := queueOf(p); q != "" && q != queue.RootName && !seen[q]; q = parent[q] {
		seen[q] = true
		w.boundSince[q] += cpu
		if v, ok := w.lastViews[q]; ok && v.Holding+w.boundSince[q] > v.DeservedLo {
			w.allUnderSince = time.Time{}
		}
	}
}

func (w *watcher) preemptible(ev eviction) bool {
	for prio, at := range w.pendingSeen[queueOf(ev.pod)] {
		if prio > prioOf(ev.pod) && at.After(ev.at.Add(-thrashQuiet)) {
			return true
		}
	}
	return false
}

func (w *watcher) lastBinding() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastBind
}

func queueOf(p *v1.Pod) string { return p.Labels[qapi.QueueLabel] }

func prioOf(p *v1.Pod) int32 {
	if p.Spec.Priority == nil {
		return 0
	}
	return *p.Spec.Priority
}

func podsOn(s *snapshot, node string) string {
	var out []string
	for _, p := range s.Pods {
		if p.Node == node && p.alive() {
			out = append(out, fmt.Sprintf("%s(%dm%s)", p.Name, p.CPU, map[bool]string{true: ",terminating"}[p.Terminating]))
		}
	}
	return strings.Join(out, " ")
}

func groupLine(g *groupState) string {
	bound := g.count(func(p *podState) bool { return p.Node != "" && !p.Finished })
	fin := g.count(func(p *podState) bool { return p.Finished })
	pend := g.count((*podState).pending)
	term := g.count(func(p *podState) bool { return p.Terminating })
	nom := g.count(func(p *podState) bool { return p.pending() && p.Nominated != "" })
	return fmt.Sprintf("%s q=%s min=%d pods=%d bound=%d pending=%d nominated=%d finished=%d terminating=%d prio=%d cpu=%dm",
		g.Name, g.Queue, g.MinMember, len(g.Pods), bound, pend, nom, fin, term, g.Priority, g.memberCPU())
}

func sharesLine(views map[string]queueView) string {
	var names []string
	for n := range views {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		v := views[n]
		out = append(out, fmt.Sprintf("%s holds %dm deserved %d-%dm guarantee %dm", n, v.Holding, v.DeservedLo, v.DeservedHi, v.Guarantee))
	}
	return strings.Join(out, "; ")
}

// state is the model in a few lines: what was bound and pending, per group,
// queue and node, for failure reports.
func (s *snapshot) state() string {
	var b strings.Builder
	var names []string
	for n := range s.Groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  group %s\n", groupLine(s.Groups[n]))
	}
	fmt.Fprintf(&b, "  queues: %s\n", sharesLine(s.queueViews()))
	for _, n := range s.Nodes {
		fmt.Fprintf(&b, "  node %s %v used %d/%dm: %s\n", n.Name, n.Labels, n.Used, n.Alloc, podsOn(s, n.Name))
	}
	return b.String()
}
