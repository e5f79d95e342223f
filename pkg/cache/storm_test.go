package cache

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// The tests in this file check the cache's event handlers against the
// property that makes incremental aggregates trustworthy: whatever order the
// informers deliver add, update and delete events in, and however the
// handlers interleave across goroutines, the aggregates end up equal to those
// of a cache that was only shown the final objects. A mismatch means an event
// was counted twice, never subtracted, or subtracted from the wrong group or
// queue.

// stormNS is the namespace of every object of the storm and the fuzz target.
const stormNS = "storm"

// stormQueues are the queues of the universe; "missing" names none.
var stormQueues = []string{"q0", "q1", "missing"}

// stormGroups are the PodGroup names pods may be labelled with.
var stormGroups = []string{"g0", "g1", "g2", "g3"}

// newStormCache is an admission-enabled cache with the storm's queues and one
// node: the starting point of both the stormed cache and its replay.
func newStormCache(tb testing.TB) *Cache {
	c, _, _ := newAdmissionCache(tb, singletons, mkQueue("q0", weight(2)), mkQueue("q1", capability("8")), mkQueue("default"))
	c.ApplyNode(logger, mkNode("n1", "64"))
	return c
}

// stormPod is the pod named name in the state that the choices a..e select:
// its PodGroup label (or none), its queue label, binding, phase and cpu. The
// priority depends on the name only, as a pod's priority cannot change.
func stormPod(name string, a, b, c, d, e int) *v1.Pod {
	group := ""
	if a%(len(stormGroups)+1) < len(stormGroups) {
		group = stormGroups[a%(len(stormGroups)+1)]
	}
	p := mkPod(stormNS, name, group, ours, priority(int32(len(name)%3)*5), cpu(fmt.Sprintf("%dm", 100*(1+e%4))))
	if group == "" {
		// Only singletons carry a queue label: a gang takes its queue from
		// its PodGroup, and from a member only when the PodGroup names none.
		inQueue(stormQueues[b%len(stormQueues)])(p)
	}
	if c%2 == 1 {
		p.Spec.NodeName = "n1"
	}
	p.Status.Phase = []v1.PodPhase{v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed}[d%4]
	return p
}

// stormPG is PodGroup name with minMember 1..3 and, for even q, a queue label.
func stormPG(name string, m, q int) *v1alpha1.PodGroup {
	var opts []pgOpt
	if q%2 == 0 {
		opts = append(opts, pgQueue(stormQueues[(q/2)%len(stormQueues)]))
	}
	return mkPG(stormNS, name, int32(1+m%3), opts...)
}

// replayOf builds a fresh cache shown only the final objects: PodGroups that
// exist and pods that exist, each delivered once, as after a relist.
func replayOf(tb testing.TB, pgs map[string]*v1alpha1.PodGroup, pods map[string]*v1.Pod) *Cache {
	r := newStormCache(tb)
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		if p := pods[name]; p != nil {
			podEvent(r, p)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(pgs)) {
		if pg := pgs[name]; pg != nil {
			addPG(r, pg)
		}
	}
	return r
}

// aggregates renders every history-independent aggregate of the cache, one
// sorted line each: per group its PodGroup, counts, members, priority and
// whether it may be enqueued; the member index; the cluster's used amount;
// each queue's allocated amount; per pod how admission counted it; per unit
// its queue, members and what it holds. (Admission decisions, and so
// inflight, depend on when passes ran; recount checks those for consistency.)
func aggregates(c *Cache) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for k, g := range c.groups {
		uids := slices.Sorted(maps.Keys(g.Members))
		var reqs []resources.List
		for _, m := range g.Members {
			if !m.State.Phase.Terminal() {
				reqs = append(reqs, m.Request)
			}
		}
		out = append(out, fmt.Sprintf("group %s: podgroup=%v min=%d counts=%+v members=%v priority=%d enqueueable=%v minRequest=%s",
			k, g.Obj != nil, g.Spec.MinMember, g.Counts, uids, g.Priority, g.Enqueueable, nonZero(gang.MinRequest(g.Spec, reqs))))
	}
	for uid, k := range c.memberOf {
		out = append(out, fmt.Sprintf("memberOf %s: %s", uid, k))
	}
	a := c.adm
	out = append(out, "used: "+nonZero(a.Used))
	// The running members of a deleted PodGroup stay charged to the queue
	// their gang was in (a designed history dependence, see
	// docs/reliability.md); they are compared without their queue.
	allocated := map[string]resources.List{}
	for q, u := range a.Usage {
		allocated[q] = u.Allocated.Clone()
	}
	byPrio := map[string]resources.List{}
	for q, m := range a.ByPrio {
		for prio, l := range m {
			byPrio[fmt.Sprintf("%s/%d", q, prio)] = l.Clone()
		}
	}
	for uid, p := range a.Pods {
		if !p.Unit.IsZero() && a.Units[p.Unit] == nil && p.Unit.Kind == queue.KindGroup {
			if p.Bound {
				allocated[p.Queue].Sub(p.Req)
				if l := byPrio[fmt.Sprintf("%s/%d", p.Queue, p.Prio)]; l != nil {
					l.Sub(p.Req)
				}
			}
			out = append(out, fmt.Sprintf("pod %s: unit=%s (gone) req=%s bound=%v", uid, p.Unit, nonZero(p.Req), p.Bound))
			continue
		}
		out = append(out, fmt.Sprintf("pod %s: unit=%s queue=%s req=%s bound=%v", uid, p.Unit, p.Queue, nonZero(p.Req), p.Bound))
	}
	for q, l := range allocated {
		if s := nonZero(l); s != "" {
			out = append(out, fmt.Sprintf("queue %s: allocated %s", q, s))
		}
	}
	for qp, l := range byPrio {
		if s := nonZero(l); s != "" {
			out = append(out, fmt.Sprintf("queue/priority %s: allocated %s", qp, s))
		}
	}
	for k, u := range a.Units {
		out = append(out, fmt.Sprintf("unit %s: queue=%s members=%d min=%d held=%s", k, u.Queue, u.Members, u.Min, nonZero(u.Held)))
	}
	sort.Strings(out)
	return out
}

// nonZero renders a list without its zero amounts, which are not kept
// consistently (an amount that went up and down again stays as a zero).
func nonZero(l resources.List) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if l[k] != 0 {
			parts = append(parts, k+"="+resources.Format(k, l[k]))
		}
	}
	return strings.Join(parts, ",")
}

// wantReplayEqual fails when c's aggregates differ from those of a cache
// shown only the final objects, or from a recount of c's own records.
func wantReplayEqual(t testing.TB, c *Cache, pgs map[string]*v1alpha1.PodGroup, pods map[string]*v1.Pod) {
	t.Helper()
	if errs := append(recount(c), indexErrors(c)...); len(errs) > 0 {
		t.Fatalf("admission aggregates differ from a recount:\n  %s", strings.Join(errs, "\n  "))
	}
	got, want := aggregates(c), aggregates(replayOf(t, pgs, pods))
	if slices.Equal(got, want) {
		return
	}
	var diff []string
	for _, l := range got {
		if !slices.Contains(want, l) {
			diff = append(diff, "- "+l)
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			diff = append(diff, "+ "+l)
		}
	}
	t.Fatalf("aggregates after the events (-) differ from a replay of the final objects (+):\n  %s", strings.Join(diff, "\n  "))
}

// A member whose requests change in place (a resize) changes its gang's
// minimum: the gang reserves and is checked against what its pods ask now.
func TestResizedMemberChangesGangMinimum(t *testing.T) {
	c := newStormCache(t)
	addPG(c, mkPG(stormNS, "g", 2))
	m0, m1 := memberOf(stormNS, "m0", "g", cpu("1")), memberOf(stormNS, "m1", "g", cpu("1"))
	podEvent(c, m0)
	podEvent(c, m1)
	podEvent(c, next(m1, cpu("3")))
	if got, _ := c.MinRequest(key(stormNS, "g")); got[resources.CPU] != 4000 {
		t.Fatalf("gang minimum after a member was resized from 1 to 3 cpu = %s, want cpu=4", got)
	}
	if u := unitOf(c, queue.GroupUnit(stormNS, "g")); u == nil || u.Request[resources.CPU] != 4000 {
		t.Fatalf("admission unit of the resized gang = %+v, want a request of 4 cpu", u)
	}
}

// indexErrors reports where the pods indexed by unit differ from the pods'
// accounts.
func indexErrors(c *Cache) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var errs []string
	accounted := map[*admission.PodAcct]bool{}
	for _, p := range c.adm.Pods {
		accounted[p] = true
	}
	for unit, l := range c.adm.UnitPods {
		for i, p := range l {
			if !accounted[p] || p.Unit != unit || int(p.Slot) != i {
				errs = append(errs, fmt.Sprintf("account %+v is indexed under unit %s at %d (is a pod's account: %v)", p, unit, i, accounted[p]))
			}
		}
	}
	for uid, p := range c.adm.Pods {
		if p.Slot < 0 {
			// A singleton's own account, found through its unit's pod.
			if u := c.adm.Units[p.Unit]; u == nil || u.Gang != nil || u.Pod.UID != uid {
				errs = append(errs, fmt.Sprintf("pod %s's solo account of unit %s is not its unit's pod's", uid, p.Unit))
			}
			continue
		}
		if l := c.adm.UnitPods[p.Unit]; !p.Unit.IsZero() && (int(p.Slot) >= len(l) || l[p.Slot] != p) {
			errs = append(errs, fmt.Sprintf("pod %s of unit %s is not indexed", uid, p.Unit))
		}
	}
	return errs
}

// TestEventStorm delivers more than 10,000 pod events from several goroutines
// (each owning its pods, as an informer orders one object's events), with
// PodGroups, a Queue and admission passes changing underneath, and readers
// asking what the plugins ask. Run it with -race.
func TestEventStorm(t *testing.T) {
	const (
		writers       = 8
		podsPerWriter = 40
		eventsPer     = 1300 // 8 x 1300 = 10,400 pod events
		pgEvents      = 600
	)
	c := newStormCache(t)

	var mu sync.Mutex // guards finalPGs; finalPods is written per writer
	finalPGs := map[string]*v1alpha1.PodGroup{}
	finalPods := make([]map[string]*v1.Pod, writers)
	done := make(chan struct{})
	var writersWG, othersWG sync.WaitGroup

	othersWG.Add(2)
	go func() { // PodGroups come, change and go
		defer othersWG.Done()
		rng := newRand(99)
		for range pgEvents {
			name := stormGroups[rng.intn(len(stormGroups))]
			mu.Lock()
			if rng.intn(4) == 0 {
				if old := finalPGs[name]; old != nil {
					delPG(c, old)
				}
				finalPGs[name] = nil
			} else {
				pg := stormPG(name, rng.intn(3), rng.intn(6))
				addPG(c, pg)
				finalPGs[name] = pg
			}
			mu.Unlock()
		}
	}()
	go func() { // readers, passes and Queue updates
		defer othersWG.Done()
		probes := []*v1.Pod{memberOf(stormNS, "probe-m", "g1"), single(stormNS, "probe-s", inQueue("q0"))}
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			p := probes[i%len(probes)]
			c.Admitted(p)
			c.SortInfo(p)
			c.Enqueueable(p)
			c.PreFilter(p, t0)
			switch i % 6 {
			case 0:
				c.AdmissionPass(logger, t0.Add(time.Duration(i)*time.Millisecond))
			case 3:
				c.SetQueue(mkQueue("q0", weight(int32(1+i%4))), false)
			}
		}
	}()

	began := time.Now()
	for w := range writers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			rng := newRand(uint64(w) + 1)
			live := map[string]*v1.Pod{}
			gen := map[string]int{}
			for range eventsPer {
				name := fmt.Sprintf("w%d-p%d", w, rng.intn(podsPerWriter))
				var in podInformers
				if old := live[name]; old != nil && rng.intn(6) == 0 {
					in.change(old, nil, rng.intn(2) == 0)
					live[name] = nil
					gen[name]++
				} else {
					p := successor(old, stormPod(name, rng.intn(8), rng.intn(8), rng.intn(8), rng.intn(8), rng.intn(8)), gen[name])
					in.change(old, p, false)
					live[name] = p
				}
				// The pod informers are independent: any delivers first.
				for in.pending() > 0 {
					switch rng.intn(3) {
					case 0:
						in.deliverMember(c)
					case 1:
						in.deliverSched(c)
					default:
						in.deliverFinished(c)
					}
				}
			}
			finalPods[w] = live
		}()
	}
	writersWG.Wait()
	close(done)
	othersWG.Wait()
	t.Logf("%d pod events from %d goroutines and %d PodGroup events in %v", writers*eventsPer, writers, pgEvents, time.Since(began).Round(time.Millisecond))

	pods := map[string]*v1.Pod{}
	for _, live := range finalPods {
		maps.Copy(pods, live)
	}
	wantReplayEqual(t, c, finalPGs, pods)
	// One more pass on each side must not change what they agree on.
	c.AdmissionPass(logger, t0.Add(time.Hour))
	wantReplayEqual(t, c, finalPGs, pods)
}

// informerEvent is one pod event waiting in an informer's queue.
type informerEvent struct {
	pod     *v1.Pod
	deleted bool
	// tombstone: the delete arrives as DeletedFinalStateUnknown, as after
	// a watch gap.
	tombstone bool
}

// podInformers are the cache's pod informers as its three pod handlers see
// them: the scheduler's pod informer (unfinished pods) delivers to the member
// handler (members) and to queue accounting (sched), each on its own, and the
// finished-member informer (finished pods with the PodGroup label) to
// onFinishedPod. Each delivers one object's events in order, but they are
// independent: any may be behind.
type podInformers struct {
	members, sched, finished []informerEvent
}

// change queues what the informers deliver when a pod goes from old to p
// (nil: absent; tombstone: a delete seen after a watch gap). A pod that
// finishes leaves the scheduler's informer as a delete carrying its last
// unfinished state, and enters the finished-member informer.
func (in *podInformers) change(old, p *v1.Pod, tombstone bool) {
	unfinished := func(p *v1.Pod) bool { return p != nil && !phaseOf(p).Terminal() }
	finished := func(p *v1.Pod) bool {
		if p == nil || !phaseOf(p).Terminal() {
			return false
		}
		_, labelled := gangbook.GroupKeyOf(p)
		return labelled
	}
	var ev *informerEvent
	switch {
	case unfinished(p):
		ev = &informerEvent{pod: p}
	case unfinished(old):
		ev = &informerEvent{pod: old, deleted: true, tombstone: tombstone}
	}
	if ev != nil {
		in.members, in.sched = append(in.members, *ev), append(in.sched, *ev)
	}
	switch {
	case finished(p):
		in.finished = append(in.finished, informerEvent{pod: p})
	case finished(old):
		in.finished = append(in.finished, informerEvent{pod: old, deleted: true, tombstone: tombstone})
	}
}

func (in *podInformers) pending() int { return len(in.members) + len(in.sched) + len(in.finished) }

// successor makes p, the next state a test chose for a pod that was old (nil:
// absent; gen: how often its name was deleted), one a cluster can show: a
// re-created pod has a new UID, and a finished pod stays finished.
func successor(old, p *v1.Pod, gen int) *v1.Pod {
	if old == nil {
		p.UID = types.UID(fmt.Sprintf("%s-%d", p.UID, gen))
		return p
	}
	p.UID = old.UID
	if phaseOf(old).Terminal() && !phaseOf(p).Terminal() {
		p.Status.Phase = old.Status.Phase
	}
	return p
}

// pop takes the oldest event of an informer's queue.
func pop(q *[]informerEvent) (ev informerEvent, obj any, ok bool) {
	if len(*q) == 0 {
		return ev, nil, false
	}
	ev, *q = (*q)[0], (*q)[1:]
	obj = ev.pod
	if ev.tombstone {
		obj = tombstone(ev.pod)
	}
	return ev, obj, true
}

// deliverMember delivers the scheduler informer's oldest event to the member
// handler, if any.
func (in *podInformers) deliverMember(c *Cache) {
	switch ev, obj, ok := pop(&in.members); {
	case !ok:
	case ev.deleted:
		c.onUnfinishedPodDelete(logger, obj)
	default:
		c.onUnfinishedPod(logger, obj)
	}
}

// deliverFinished delivers the finished-member informer's oldest event, if any.
func (in *podInformers) deliverFinished(c *Cache) {
	switch ev, obj, ok := pop(&in.finished); {
	case !ok:
	case ev.deleted:
		c.DeleteFinishedPod(logger, asPod(obj))
	default:
		c.ApplyFinishedPod(logger, nil, asPod(obj))
	}
}

// deliverSched delivers the scheduler informer's oldest event, if any.
func (in *podInformers) deliverSched(c *Cache) {
	if ev, obj, ok := pop(&in.sched); ok {
		c.onAnyPod(obj, ev.deleted)
	}
}

// FuzzCacheEvents applies a sequence of events decoded from the input to one
// cache and compares its aggregates with a replay of the final objects. Each
// step takes 4 bytes: the first selects what happens, the others the new
// state. A pod change is queued on the pod informers that see it
// (podInformers), which deliver only when a step says so, so the fuzzer
// chooses how far one runs ahead of the others; PodGroup events and admission
// passes apply at once. Six pods and the four PodGroups make a universe small enough for the fuzzer to hit
// every transition (label moves, binding, finishing, deletion, a PodGroup
// coming after its members or going before them) in a few steps.
func FuzzCacheEvents(f *testing.F) {
	// Seeds (more under testdata/fuzz/FuzzCacheEvents): a member bound and
	// delivered to both informers; a PodGroup after its member; a relabel
	// seen by one informer while the old group moves queue.
	f.Add([]byte{0, 1, 1, 0, 20, 0, 0, 0, 21, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 1, 20, 0, 0, 0, 21, 0, 0, 0, 12, 0, 0, 0})
	f.Add([]byte{12, 0, 0, 0, 0, 0, 0, 1, 20, 0, 0, 0, 21, 0, 0, 0, 0, 1, 0, 1, 20, 0, 0, 0, 12, 0, 2, 0, 21, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		const nPods = 6
		c := newStormCache(t)
		var in podInformers
		pods := map[string]*v1.Pod{}
		gen := map[string]int{}
		pgs := map[string]*v1alpha1.PodGroup{}
		for i := 0; i+4 <= len(data) && i < 4*256; i += 4 {
			op, x, y, z := int(data[i]), int(data[i+1]), int(data[i+2]), int(data[i+3])
			switch sel := op % 24; {
			case sel < nPods: // create or change a pod
				name := fmt.Sprint("p", sel)
				p := successor(pods[name], stormPod(name, x, y, z, x>>4, y>>4), gen[name])
				in.change(pods[name], p, false)
				pods[name] = p
			case sel < 2*nPods: // delete a pod
				name := fmt.Sprint("p", sel-nPods)
				if old := pods[name]; old != nil {
					in.change(old, nil, x%2 == 1)
					pods[name] = nil
					gen[name]++
				}
			case sel < 2*nPods+len(stormGroups): // create or change a PodGroup
				name := stormGroups[sel-2*nPods]
				pg := stormPG(name, x, y)
				addPG(c, pg)
				pgs[name] = pg
			case sel < 2*nPods+2*len(stormGroups): // delete a PodGroup
				name := stormGroups[sel-2*nPods-len(stormGroups)]
				if old := pgs[name]; old != nil {
					delPG(c, old)
					pgs[name] = nil
				}
			case sel == 20:
				in.deliverMember(c)
			case sel == 21:
				in.deliverSched(c)
			case sel == 22:
				in.deliverFinished(c)
			default: // an admission pass
				c.AdmissionPass(logger, t0.Add(time.Duration(i)*time.Second))
			}
		}
		for in.pending() > 0 {
			in.deliverMember(c)
			in.deliverSched(c)
			in.deliverFinished(c)
		}
		wantReplayEqual(t, c, pgs, pods)
	})
}
