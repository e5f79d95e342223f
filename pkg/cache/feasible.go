package cache

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// passPlacement is queue.Placement for one admission pass: the placement check
// (CheckPlacement) over a working copy of every node's free room (allocatable
// minus bound pods, minus what admitted groups' unbound members will take),
// built once per pass from the incremental nodeRooms. It lives in
// feasibleState so its slices are reused from pass to pass.
type passPlacement struct {
	c   *Cache
	gen uint64

	names []string
	index map[string]int // node name -> index in names
	// rgen counts changes of the pass's resource names (prevR), which
	// remembered classes depend on.
	rgen   uint64
	prevR  []string
	rooms  []*nodeRoom
	rindex map[string]int
	rnames []string
	free   placement.Room // working free room
	placer placement.Placer

	// Eligibility per constraint signature, computed at most once a pass.
	eligible  map[string][]int32
	untainted []int32
	haveUnt   bool

	// reservedBy names, per node, the group the node is reserved for.
	reservedBy []queue.Key

	// unplaceable are the admitted singletons that failed to fit since
	// their admission and fit no node of this pass's free room either
	// (placeInflight): the pass returns them to pending.
	unplaceable []*unit

	// What the last Check found, applied to free by Commit.
	lastKey   queue.Key
	lastOK    bool
	lastSteps []placement.Step
	classes   []placement.Class
	classKey  queue.Key

	// starts remembers, per request and node list, where the last plain
	// search found the first node with room: the working room only shrinks
	// within a pass (a Check undoes itself, a Commit takes), so the nodes
	// before it cannot have room later in the pass.
	starts map[startKey]int
	// slab holds the classes' request vectors, reused from pass to pass.
	slab []int64
	// loose is unitClasses' scratch list of members.
	loose []*member

	// What reclaim can take back in the pass, built on the first reclaim
	// Check (planroom.go), and the plan room's scratch space.
	pool     reclaimPool
	planFree []int64
}

// startKey identifies a class for passPlacement.starts: its request (the
// first four resources; classes with more are not remembered) and its
// node list.
type startKey struct {
	req   [4]int64
	nodes *int32
	n     int
}

func (pp *passPlacement) keyOf(c placement.Class) (startKey, bool) {
	if len(c.Request) > 4 {
		return startKey{}, false
	}
	k := startKey{n: -1}
	copy(k.req[:], c.Request)
	if c.Nodes != nil {
		k.n = len(c.Nodes)
		if len(c.Nodes) > 0 {
			k.nodes = &c.Nodes[0]
		}
	}
	return k, true
}

// placementLocked prepares the placement check for a pass: the nodes' free
// room, less what the admitted groups still being placed need (their members
// placed first, where the scheduler reserved them or first-fit), less the
// nodes reserved for starving groups. O(nodes x resources + admitted-unplaced
// members), never a scan of pods.
func (c *Cache) placementLocked() *passPlacement {
	f := &c.feasible
	pp := &f.pass
	pp.c = c
	pp.gen++
	pp.indexResources(c.total)
	if f.nodesChanged || pp.index == nil {
		pp.indexNodes(f.rooms)
		f.nodesChanged = false
	}
	pp.freeRoom(f.rooms)
	pp.free.Blocked = nil
	pp.reservedBy = pp.reservedBy[:0]
	clear(pp.eligible)
	if pp.starts == nil {
		pp.starts = map[startKey]int{}
	}
	clear(pp.starts)
	pp.slab = pp.slab[:0]
	pp.haveUnt, pp.pool.ready = false, false
	pp.lastKey, pp.lastOK, pp.classKey = queue.Key{}, false, queue.Key{}
	pp.unplaceable = pp.unplaceable[:0]

	index := pp.index
	// Admitted groups not placed yet: their members' room is not free.
	for _, u := range f.inflight {
		pp.placeInflight(u, index)
	}
	// Reservations of the last pass hold until this pass renews or drops them.
	for key, res := range f.reservations {
		for _, n := range res.nodes {
			if i, ok := index[n]; ok {
				pp.block(i, key)
			}
		}
	}
	return pp
}

// indexResources sets the pass's resource names, those of total in name
// order, and counts a change of them (rgen) for the memos keyed by it.
func (pp *passPlacement) indexResources(total resources.List) {
	pp.rnames = pp.rnames[:0]
	for k := range total {
		pp.rnames = append(pp.rnames, k)
	}
	sort.Strings(pp.rnames)
	if !slices.Equal(pp.rnames, pp.prevR) {
		pp.rgen++
		pp.prevR = append(pp.prevR[:0], pp.rnames...)
	}
	if pp.rindex == nil {
		pp.rindex = map[string]int{}
	}
	clear(pp.rindex)
	for j, k := range pp.rnames {
		pp.rindex[k] = j
	}
}

// indexNodes orders the known nodes by name: the same first-fit order every
// pass, so reservations and placements are stable. Done again only when
// nodes come or go.
func (pp *passPlacement) indexNodes(rooms map[string]*nodeRoom) {
	pp.names = pp.names[:0]
	for name, nr := range rooms {
		if nr.node != nil {
			pp.names = append(pp.names, name)
		}
	}
	sort.Strings(pp.names)
	pp.index = make(map[string]int, len(pp.names))
	for i, n := range pp.names {
		pp.index[n] = i
	}
}

// freeRoom fills the working room: each node's allocatable less what its
// bound pods request, per resource, and the most any node has free.
func (pp *passPlacement) freeRoom(rooms map[string]*nodeRoom) {
	r := len(pp.rnames)
	pp.rooms = pp.rooms[:0]
	pp.free.R = r
	pp.free.Free = growInt64(pp.free.Free, len(pp.names)*r)
	for i, name := range pp.names {
		nr := rooms[name]
		pp.rooms = append(pp.rooms, nr)
		for j, k := range pp.rnames {
			pp.free.Free[i*r+j] = nr.alloc[k] - nr.used[k]
		}
	}
	pp.free.Max = growInt64(pp.free.Max, r)
	for j := range r {
		m := int64(0)
		for i := range pp.names {
			m = max(m, pp.free.Free[i*r+j])
		}
		pp.free.Max[j] = m
	}
}

// placeInflight takes from the working room what an admitted, unstarted
// unit's unbound members need: a member the scheduler has reserved a node
// for takes it there, the others go first-fit-decreasing. A member that fits
// nowhere is left out: it is about to fail and release its gang, and
// counting it anywhere would keep room from others.
func (pp *passPlacement) placeInflight(u *unit, index map[string]int) {
	r := pp.free.R
	if u.gang == nil {
		if u.pod == nil || u.pod.Spec.NodeName != "" {
			return
		}
		if placed, _ := pp.placer.Place(&pp.free, []placement.Class{pp.classOf(u.pod, u.request, 1)}); placed == 0 && u.failedFit {
			pp.unplaceable = append(pp.unplaceable, u)
		}
		return
	}
	g := u.gang
	need := int(g.spec.MinMember) - g.counts.Bound
	var loose []*member
	for _, m := range g.members {
		if m.state.Phase.Terminal() || m.state.Assigned {
			continue
		}
		if n := m.node(); n != "" {
			if i, ok := index[n]; ok && need > 0 {
				for k, v := range m.request {
					if j, ok := pp.rindex[k]; ok {
						pp.free.Free[i*r+j] -= v
					}
				}
				need--
			}
			continue
		}
		loose = append(loose, m)
	}
	if need <= 0 || len(loose) == 0 {
		return
	}
	pp.classes = pp.membersClasses(pp.classes[:0], loose, need)
	pp.classKey = queue.Key{}
	pp.placer.Place(&pp.free, pp.classes)
}

// membersClasses appends the classes of the need smallest of members.
func (pp *passPlacement) membersClasses(dst []placement.Class, members []*member, need int) []placement.Class {
	if need < len(members) {
		slices.SortFunc(members, func(a, b *member) int { return compareReq(a.request, b.request) })
		members = members[:need]
	}
	start := len(dst)
	var prevReq resources.List
	prevFree := false // the previous member may use every node
	for _, m := range members {
		// Members' request lists are interned (requestInterner): a member
		// asking the same as the previous one, with no constraint either,
		// joins its class without building a vector.
		free := pp.unconstrained(m.pod)
		if free && prevFree && len(dst) > start && mapID(m.request) == mapID(prevReq) {
			dst[len(dst)-1].Count++
			continue
		}
		prevReq, prevFree = m.request, free
		mark := len(pp.slab)
		c := pp.classOf(m.pod, m.request, 1)
		merged := false
		for k := start; k < len(dst); k++ {
			if slices.Equal(dst[k].Request, c.Request) && sameNodes(dst[k].Nodes, c.Nodes) {
				dst[k].Count++
				merged = true
				break
			}
		}
		if merged && len(pp.slab) > mark {
			pp.slab = pp.slab[:mark] // the request vector is not kept
		} else if !merged {
			dst = append(dst, c)
		}
		if merged {
			prevFree = false // the last class is not this member's
		}
	}
	return dst
}

// compareReq orders requests by cpu, then memory, then their sum.
func compareReq(a, b resources.List) int {
	for _, k := range []string{resources.CPU, "memory"} {
		if a[k] != b[k] {
			if a[k] < b[k] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// sameNodes compares eligibility lists; they come from one memo per
// signature, so equal lists are usually the same slice.
func sameNodes(a, b []int32) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b))
}

// classOf is one member's class: its request over the pass's resources and
// the nodes it may use. A request for a resource no node has fits nowhere.
func (pp *passPlacement) classOf(pod *v1.Pod, req resources.List, n int) placement.Class {
	r := pp.free.R
	if len(pp.slab)+r > cap(pp.slab) {
		// A new chunk: classes made so far keep pointing into the old one.
		pp.slab = make([]int64, 0, max(4096, 2*cap(pp.slab)))
	}
	start := len(pp.slab)
	pp.slab = append(pp.slab, make([]int64, r)...)
	c := placement.Class{Request: pp.slab[start : start+r : start+r], Count: n, Nodes: pp.eligibleFor(pod)}
	matched := 0
	for j, k := range pp.rnames {
		if v, ok := req[k]; ok {
			matched++
			c.Request[j] = max(v, 0)
		}
	}
	if matched < len(req) {
		for k, v := range req {
			if _, ok := pp.rindex[k]; !ok && v > 0 {
				c.Nodes = []int32{}
			}
		}
	}
	return c
}

// unconstrained reports whether pod may use every node: no node selector,
// no required node affinity, and no node has a taint that matters.
func (pp *passPlacement) unconstrained(pod *v1.Pod) bool {
	if pp.c.feasible.tainted > 0 || len(pod.Spec.NodeSelector) > 0 {
		return false
	}
	a := pod.Spec.Affinity
	return a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil
}

// eligibleFor lists the nodes pod may use by its node selector, required
// node affinity and NoSchedule/NoExecute taints (the upstream helpers the
// NodeAffinity and TaintToleration plugins use); nil means every node. Pods
// with the same constraints share one list per pass, so a gang made from one
// template costs one scan of the nodes.
func (pp *passPlacement) eligibleFor(pod *v1.Pod) []int32 {
	f := &pp.c.feasible
	spec := &pod.Spec
	affine := len(spec.NodeSelector) > 0 ||
		(spec.Affinity != nil && spec.Affinity.NodeAffinity != nil && spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil)
	if !affine && f.tainted == 0 {
		return nil
	}
	if !affine && len(spec.Tolerations) == 0 {
		if !pp.haveUnt {
			pp.untainted = pp.untainted[:0]
			for i, nr := range pp.rooms {
				if !nr.tainted {
					pp.untainted = append(pp.untainted, int32(i))
				}
			}
			pp.haveUnt = true
		}
		return pp.untainted
	}
	var na *v1.NodeSelector
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		na = spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	tol := spec.Tolerations
	if f.tainted == 0 {
		tol = nil
	}
	sig, _ := json.Marshal(struct {
		S map[string]string
		A *v1.NodeSelector
		T []v1.Toleration
	}{spec.NodeSelector, na, tol})
	if l, ok := pp.eligible[string(sig)]; ok {
		return l
	}
	aff := nodeaffinity.GetRequiredNodeAffinity(pod)
	out := []int32{}
	for i, nr := range pp.rooms {
		if ok, err := aff.Match(nr.node); err != nil || !ok {
			continue
		}
		if nr.tainted && !tolerated(nr.node, spec.Tolerations) {
			continue
		}
		out = append(out, int32(i))
	}
	if pp.eligible == nil {
		pp.eligible = map[string][]int32{}
	}
	pp.eligible[string(sig)] = out
	return out
}

// unschedulableTaint is how the NodeUnschedulable plugin sees spec.unschedulable.
var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// tolerated reports whether tolerations tolerate every NoSchedule and
// NoExecute taint of node (and its unschedulable mark).
func tolerated(node *v1.Node, tolerations []v1.Toleration) bool {
	logger := klog.Background()
	if node.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(logger, tolerations, &unschedulableTaint, false) {
		return false
	}
	_, bad := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}, false)
	return !bad
}

// unitClasses returns the classes of the members admission must place for
// the unit: a singleton's pod, or a gang's minMember smallest unbound
// members (less those already bound). Memoized for the unit last asked.
func (pp *passPlacement) unitClasses(key queue.Key) ([]placement.Class, int) {
	if pp.classKey == key {
		return pp.classes, countOf(pp.classes)
	}
	pp.classKey = key
	pp.classes = pp.classes[:0]
	u := pp.c.adm.units[key]
	switch {
	case u == nil:
	case u.gang == nil:
		pp.classes = append(pp.classes, pp.classOf(u.pod, u.request, 1))
	default:
		g := u.gang
		if m := pp.memoOf(u); m != nil {
			pp.classes = append(pp.classes, m.classes...)
			break
		}
		need := int(g.spec.MinMember) - g.counts.Bound
		if need > 0 {
			loose := pp.loose[:0]
			for _, m := range g.members {
				if !m.state.Phase.Terminal() && !m.state.Assigned {
					loose = append(loose, m)
				}
			}
			pp.classes = pp.membersClasses(pp.classes, loose, need)
			clear(loose)
			pp.loose = loose[:0]
			if n := countOf(pp.classes); n < need && !awaitsMembers(g) {
				// Members still missing: they cannot be placed yet, unless
				// their controller creates them only once admitted (Volcano).
				// A gang none of whose pods exist yet has no placement
				// to check: it is judged by sums (the queue and cluster
				// checks), as Volcano's enqueue judges it, since nothing
				// tells how minResources splits into pods, which taints
				// they tolerate or which nodes they select.
				pp.classes = append(pp.classes, pp.missingClass(g, need-n))
			}
		}
		pp.remember(u, pp.classes)
	}
	return pp.classes, countOf(pp.classes)
}

// classMemo is a pending gang's classes kept from pass to pass, valid while
// what they are made of is unchanged: the group's counts, its minimum
// request (recomputed, as a new map, whenever a member comes, goes or
// changes its request) and the pass's resource names. Only classes that
// may use every node are kept (no selector, affinity or taint in play):
// node indexes and eligibility are per pass. Reading every member's pod
// and request again for every group examined was most of a pass's cost.
type classMemo struct {
	counts gang.Counts
	// minReq is the minimum request map the classes were made with; held
	// (not only its address) so that a new map cannot reuse the address.
	minReq  resources.List
	min     int32
	rgen    uint64
	classes []placement.Class
}

func mapID(l resources.List) uintptr { return reflect.ValueOf(l).Pointer() }

// memoOf returns u's remembered classes when still valid.
func (pp *passPlacement) memoOf(u *unit) *classMemo {
	m := pp.c.feasible.memos[u.key]
	g := u.gang
	if m == nil || m.counts != g.counts || mapID(m.minReq) != mapID(g.minRequest) || !g.minRequestValid ||
		m.min != g.spec.MinMember || m.rgen != pp.rgen || pp.c.feasible.tainted > 0 {
		return nil
	}
	return m
}

// remember keeps u's classes for later passes when they may use every node.
func (pp *passPlacement) remember(u *unit, classes []placement.Class) {
	f := &pp.c.feasible
	g := u.gang
	if f.tainted > 0 || !g.minRequestValid {
		return
	}
	for _, c := range classes {
		if c.Nodes != nil {
			return
		}
	}
	m := f.memos[u.key]
	if m == nil {
		if f.memos == nil {
			f.memos = map[queue.Key]*classMemo{}
		}
		m = &classMemo{}
		f.memos[u.key] = m
	}
	m.counts, m.minReq, m.min, m.rgen = g.counts, g.minRequest, g.spec.MinMember, pp.rgen
	m.classes = m.classes[:0]
	for _, c := range classes {
		c.Request = slices.Clone(c.Request) // out of the pass's slab
		m.classes = append(m.classes, c)
	}
}

func countOf(cl []placement.Class) int {
	n := 0
	for _, c := range cl {
		n += c.Count
	}
	return n
}

// Check implements queue.Placement.
func (pp *passPlacement) Check(g queue.Group, plan queue.Plan) (fit, want int) {
	classes, want := pp.unitClasses(g.Key)
	pp.lastKey, pp.lastOK = g.Key, false
	pp.pool.last = pp.pool.last[:0] // only this Check's draws may be committed
	if want == 0 {
		pp.lastSteps = pp.lastSteps[:0]
		pp.lastOK = true
		return 0, 0
	}
	own := pp.unblockOwn(g.Key)
	room := &pp.free
	if plan != queue.PlanNone {
		room = pp.planRoom(g, plan)
	}
	// Remembered starts hold for the plain room, and not where the
	// group's own reservation was just unblocked.
	memo := plan == queue.PlanNone && len(own) == 0
	if memo {
		for k := range classes {
			if key, ok := pp.keyOf(classes[k]); ok {
				classes[k].Start = pp.starts[key]
			}
		}
	}
	fit, steps := pp.placer.Place(room, classes)
	if memo {
		for k := range classes {
			if key, ok := pp.keyOf(classes[k]); ok {
				pp.starts[key] = pp.placer.First[k]
			}
		}
	}
	for k := range classes {
		classes[k].Start = 0
	}
	if plan == queue.PlanReclaim && fit == want {
		// The room counted each victim's excess on every node it holds
		// some: within its excess in total is checked here.
		fit = pp.attribute(g, classes, steps)
	}
	placement.Undo(room, classes, steps)
	pp.lastSteps = append(pp.lastSteps[:0], steps...)
	pp.lastOK = fit == want
	pp.reblock(own, g.Key)
	return fit, want
}

// Commit implements queue.Placement: the admitted group's members take
// their room in the working copy (on a plan's room, the real room may go
// negative where victims will leave: nothing else fits there).
func (pp *passPlacement) Commit(g queue.Group) {
	if pp.lastKey != g.Key || !pp.lastOK {
		return
	}
	classes, _ := pp.unitClasses(g.Key)
	placement.Apply(&pp.free, classes, pp.lastSteps)
	pp.commitDraws()
	pp.lastOK = false
}

func growInt64(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n)
	}
	return s[:n]
}
