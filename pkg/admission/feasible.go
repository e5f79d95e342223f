package admission

import (
	"reflect"
	"slices"
	"time"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/noderoom"
	"github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// passPlacement is queue.Placement for one admission pass: the placement check
// (CheckPlacement) over a working copy of every node's free room (allocatable
// minus bound pods, minus what admitted groups' unbound members will take),
// laid out once per pass from the rooms events keep (package noderoom). It
// lives in FeasibleState so its slices are reused from pass to pass. The
// nodes' side is noderoom's; this side knows units and gangs: which members
// a unit must place, remembered classes, reservations and plan room.
type passPlacement struct {
	// Pass is the nodes' free room laid out for the pass (Free is the
	// working room placements take from and give back to).
	noderoom.Pass
	// adm and feas are the admission side and the per-node room the pass
	// reads; reclaim says whether CalderaReclaim may take room back.
	adm     *State
	feas    *FeasibleState
	reclaim bool
	gen     uint64
	placer  placement.Placer

	// reservedBy names, per node, the group the node is reserved for.
	reservedBy []queue.Key

	// unplaceable are the admitted singletons that failed to fit since
	// their admission and fit no node of this pass's free room either
	// (placeInflight): the pass returns them to pending.
	unplaceable []*Unit

	// What the last Check found, applied to free by Commit.
	lastKey   queue.Key
	lastOK    bool
	lastSteps []placement.Step
	classes   []placement.Class
	classKey  queue.Key

	// loose is unitClasses' scratch list of members.
	loose []*gangbook.Member

	// What reclaim can take back in the pass, built on the first reclaim
	// Check (planroom.go), and the plan room's scratch space.
	pool     reclaimPool
	planFree []int64

	// Tp is the pass's plan over time (timeplan.go).
	Tp timePlan
	// roomReturned: the pass ended or postponed a reservation.
	roomReturned bool
}

// placeInflight takes from the working room what an admitted, unstarted
// unit's unbound members need: a member the scheduler has reserved a node
// for takes it there, the others go first-fit-decreasing. A member that fits
// nowhere is left out: it is about to fail and release its gang, and
// counting it anywhere would keep room from others.
func (pp *passPlacement) placeInflight(u *Unit, index map[string]int) {
	r := pp.Free.R
	if u.Gang == nil {
		if u.Pod == nil || u.Pod.Spec.NodeName != "" {
			return
		}
		cl := []placement.Class{pp.ClassOf(u.Pod, u.Request, 1)}
		steps := pp.placePinned(nil, u.Key, cl)
		placed := len(steps)
		if placed == 0 {
			placed, steps = pp.placer.Place(&pp.Free, cl)
		}
		if placed == 0 && u.failedFit {
			pp.unplaceable = append(pp.unplaceable, u)
		}
		pp.noteInflight(u.Key, cl, steps)
		return
	}
	g := u.Gang
	need := int(g.Spec.MinMember) - g.Counts.Bound
	var loose []*gangbook.Member
	for _, m := range g.Members {
		if m.State.Phase.Terminal() || m.State.Assigned {
			continue
		}
		if n := m.Node(); n != "" {
			if i, ok := index[n]; ok && need > 0 {
				req := make([]int64, r)
				for k, v := range m.Request {
					if j, ok := pp.ResourceIndex[k]; ok {
						pp.Free.Free[i*r+j] -= v
						req[j] = v
					}
				}
				pp.Tp.inflight = append(pp.Tp.inflight, inflightRoom{u.Key, int32(i), req})
				need--
			}
			continue
		}
		loose = append(loose, m)
	}
	if need <= 0 {
		return
	}
	pp.classes = pp.membersClasses(pp.classes[:0], loose, need)
	pp.classKey = queue.Key{}
	if n := countOf(pp.classes); n < need && awaitsCreation(g) {
		pp.classes = append(pp.classes, pp.missingClass(g, need-n))
	}
	if len(pp.classes) == 0 {
		return
	}
	pinned := pp.placePinned(nil, u.Key, pp.classes)
	_, steps := pp.placer.Place(&pp.Free, pp.classes)
	pp.noteInflight(u.Key, pp.classes, append(pinned, steps...))
}

// holdReservedExtras takes from the free room what members beyond their
// gang's minimum hold on the nodes kube-scheduler reserved for them, until
// they bind (reserved, waiting in Permit, binding): its Filter counts them
// there. Counted only once bound, their room was free to this check, and
// a gang admitted on it could not place its minimum. A gang still placing
// its minimum is placeInflight's, reserved members included (its extras
// wait for the minimum to bind). O(reserved extras).
func (pp *passPlacement) holdReservedExtras(index map[string]int) {
	r := pp.Free.R
	for _, h := range pp.adm.Extras.Holds {
		if _, placing := pp.feas.inflight[h.unit]; placing {
			continue
		}
		i, ok := index[h.node]
		if !ok {
			continue
		}
		for k, v := range h.req {
			if j, ok := pp.ResourceIndex[k]; ok {
				pp.Free.Free[i*r+j] -= v
			}
		}
	}
}

// membersClasses appends the classes of the need smallest of members.
func (pp *passPlacement) membersClasses(dst []placement.Class, members []*gangbook.Member, need int) []placement.Class {
	if need < len(members) {
		slices.SortFunc(members, func(a, b *gangbook.Member) int { return compareReq(a.Request, b.Request) })
		members = members[:need]
	}
	start := len(dst)
	var prevReq resources.List
	prevFree := false // the previous member may use every node
	for _, m := range members {
		// Members' request lists are interned (requestInterner): a member
		// asking the same as the previous one, with no constraint either,
		// joins its class without building a vector.
		free := pp.Unconstrained(m.Pod)
		if free && prevFree && len(dst) > start && mapID(m.Request) == mapID(prevReq) {
			dst[len(dst)-1].Count++
			continue
		}
		prevReq, prevFree = m.Request, free
		mark := pp.Mark()
		c := pp.ClassOf(m.Pod, m.Request, 1)
		merged := false
		for k := start; k < len(dst); k++ {
			if slices.Equal(dst[k].Request, c.Request) && sameNodes(dst[k].Nodes, c.Nodes) {
				dst[k].Count++
				merged = true
				break
			}
		}
		if merged {
			pp.Release(mark) // the request vector is not kept
		} else {
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

// unitClasses returns the classes of the members admission must place for
// the unit: a singleton's pod, or a gang's minMember smallest unbound
// members (less those already bound). Memoized for the unit last asked.
func (pp *passPlacement) unitClasses(key queue.Key) ([]placement.Class, int) {
	if pp.classKey == key {
		return pp.classes, countOf(pp.classes)
	}
	pp.classKey = key
	pp.classes = pp.classes[:0]
	u := pp.adm.Units[key]
	switch {
	case u == nil:
	case u.Gang == nil:
		pp.classes = append(pp.classes, pp.ClassOf(u.Pod, u.Request, 1))
	default:
		g := u.Gang
		if m := pp.memoOf(u); m != nil {
			pp.classes = append(pp.classes, m.classes...)
			break
		}
		need := int(g.Spec.MinMember) - g.Counts.Bound
		if need > 0 {
			loose := pp.loose[:0]
			for _, m := range g.Members {
				if !m.State.Phase.Terminal() && !m.State.Assigned {
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
func (pp *passPlacement) memoOf(u *Unit) *classMemo {
	m := pp.feas.Memos[u.Key]
	g := u.Gang
	if m == nil || m.counts != g.Counts || mapID(m.minReq) != mapID(g.MinRequest) || !g.MinRequestValid ||
		m.min != g.Spec.MinMember || m.rgen != pp.ResourceGen || pp.feas.Rooms.Tainted() {
		return nil
	}
	return m
}

// remember keeps u's classes for later passes when they may use every node.
func (pp *passPlacement) remember(u *Unit, classes []placement.Class) {
	f := pp.feas
	g := u.Gang
	if f.Rooms.Tainted() || !g.MinRequestValid {
		return
	}
	for _, c := range classes {
		if c.Nodes != nil {
			return
		}
	}
	m := f.Memos[u.Key]
	if m == nil {
		if f.Memos == nil {
			f.Memos = map[queue.Key]*classMemo{}
		}
		m = &classMemo{}
		f.Memos[u.Key] = m
	}
	m.counts, m.minReq, m.min, m.rgen = g.Counts, g.MinRequest, g.Spec.MinMember, pp.ResourceGen
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

// Check implements queue.Placement. A group that fits the free room now
// is refused (fit 0) when starting it would delay a reservation (Delayed).
func (pp *passPlacement) Check(g queue.Group, plan queue.Plan) (fit, want int) {
	if plan == queue.PlanNone && !pp.Tp.built && len(pp.feas.Timed) > 0 {
		pp.buildPlan() // before the classes: it uses their scratch
	}
	// A group whose members fit the free room now, refused only for
	// delaying a reservation, gets nothing from a plan's room: the plan
	// search finds no victims for a group that fits without evictions, so
	// an admission on it would be released at once, and its placement here
	// would take the same reserved room.
	vetoed := plan != queue.PlanNone && pp.Tp.vetoed == g.Key
	pp.Tp.delayed, pp.Tp.vetoed = false, queue.Key{}
	classes, want := pp.unitClasses(g.Key)
	pp.lastKey, pp.lastOK = g.Key, false
	pp.pool.last = pp.pool.last[:0] // only this Check's draws may be committed
	if want == 0 {
		return pp.checkPodless(g, plan, vetoed)
	}
	if vetoed {
		pp.lastSteps = pp.lastSteps[:0]
		return 0, want
	}
	own := pp.unblockOwn(g.Key)
	room := &pp.Free
	if plan != queue.PlanNone {
		room = pp.planRoom(g, plan)
	}
	// Remembered starts hold for the plain room, and not where the
	// group's own reservation was just unblocked.
	memo := plan == queue.PlanNone && len(own) == 0
	if memo {
		for k := range classes {
			classes[k].Start = pp.Start(classes[k])
		}
	}
	fit, steps := pp.placer.Place(room, classes)
	if memo {
		for k := range classes {
			pp.SetStart(classes[k], pp.placer.First[k])
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
	if pp.lastOK && plan == queue.PlanNone && !pp.backfills(g, classes) {
		pp.lastOK = false
		return 0, want
	}
	return fit, want
}

// Commit implements queue.Placement: the admitted group's members take
// their room in the working copy (on a plan's room, the real room may go
// negative where victims will leave: nothing else fits there).
func (pp *passPlacement) Commit(g queue.Group) {
	if pp.lastKey != g.Key || !pp.lastOK {
		return
	}
	classes, want := pp.unitClasses(g.Key)
	if want == 0 {
		pp.commitAwaited(g)
	} else {
		classes, steps := pp.admittedSteps(g, classes)
		placement.Apply(&pp.Free, classes, steps)
		pp.pin(g.Key, classes, steps)
	}
	pp.commitJob(g)
	pp.markSince(g.Key)
	pp.commitDraws()
	pp.lastOK = false
}

// placementLocked prepares the placement check for a pass of a, with total
// the cluster's allocatable and reclaim whether CalderaReclaim runs: the nodes' free
// room, less what the admitted groups still being placed need (their members
// placed first, where the scheduler reserved them or first-fit), less the
// nodes reserved for starving groups. O(nodes x resources + admitted-unplaced
// members), never a scan of pods.
func (f *FeasibleState) placementLocked(a *State, total resources.List, reclaim bool, now time.Time) *passPlacement {
	pp := &f.Pass
	pp.adm, pp.feas, pp.reclaim = a, f, reclaim
	pp.gen++
	pp.Prepare(&f.Rooms, total)
	pp.resetTime(now)
	pp.reservedBy = pp.reservedBy[:0]
	pp.pool.ready = false
	pp.lastKey, pp.lastOK, pp.classKey = queue.Key{}, false, queue.Key{}
	pp.unplaceable = pp.unplaceable[:0]

	index := pp.Index
	// Admitted groups not placed yet: their members' room is not free.
	for _, u := range f.inflight {
		pp.placeInflight(u, index)
	}
	pp.holdReservedExtras(index)
	// Reservations of the last pass hold until this pass renews or drops them.
	for key, res := range f.Reservations {
		for _, n := range res.nodes {
			if i, ok := index[n]; ok {
				pp.block(i, key)
			}
		}
	}
	return pp
}
