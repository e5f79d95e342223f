package queue

import (
	"math"
	"sort"
	"strconv"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// Usage is what one queue's own groups hold and ask for; groups of its
// descendants are reported under their own queues. Negative amounts count as 0.
type Usage struct {
	// Allocated is what the queue's groups hold on nodes (bound or reserved pods).
	Allocated resources.List
	// Inflight is what admitted groups still need beyond what they hold:
	// admitted but not yet bound. It counts in the cluster check of every
	// admission even when the queue is missing or broken.
	Inflight resources.List
	// Pending is what groups not yet admitted ask for. A closed queue's pending
	// work cannot be admitted, so it does not count as demand.
	Pending resources.List
}

// UnboundedShare is the share of a queue that holds some resource of which it
// deserves none. It sorts after every finite share and encodes in JSON.
const UnboundedShare = math.MaxFloat64

// QueueShare is the fair-share view of one queue and its descendants.
type QueueShare struct {
	// Deserved is the queue's fair share, for the resources it demands or was given.
	Deserved resources.List
	// RealCapability is the most the queue may hold: its capability, within
	// what its parent may hold minus the guarantees of its siblings.
	RealCapability resources.List
	// Allocated is what the queue and its descendants hold.
	Allocated resources.List
	// Inflight is what their admitted groups still need.
	Inflight resources.List
	// Demand is allocated + inflight + pending (pending of open queues only).
	Demand resources.List
	// Share is max over resources of Allocated / Deserved (see ShareOf).
	Share float64
}

// Shares is the result of Divide: the fair-share division of a cluster among
// the queues of a Tree. Admit adds what it admits to the inflight amounts, so
// a Shares may serve several passes; it is not safe for concurrent use while
// Admit runs.
type Shares struct {
	tree  *Tree
	names []string       // resource names, sorted
	index map[string]int // resource name -> position in names
	r     int            // len(names)
	total []int64
	// divided is what the top-level queues divide as deserved shares: the
	// total less what pods outside every queue hold (DivideWithout).
	divided []int64

	// Per queue node, r amounts each, at node*r. Zero for broken queues.
	deserved     []int64 // the queue's with its descendants'
	realCap      []int64
	alloc        []int64 // subtree sums
	inflight     []int64
	demand       []int64
	selfDeserved []int64 // the part of deserved for the queue's own groups
	selfAlloc    []int64
	selfInflight []int64
	share        []float64

	inflightAll []int64 // every queue's inflight, known or not
}

// nn returns v, or 0 when v is negative.
func nn(v int64) int64 { return max(v, 0) }

// satAdd adds two non-negative amounts, saturating at MaxInt64.
func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

// Divide computes every healthy queue's deserved share and real capability
// from the cluster's total and each queue's usage (by queue name; usage of
// unknown queues only counts towards the cluster's inflight).
//
// A queue's demand is its allocated + inflight + pending (pending only while it
// is open), plus its descendants' demand. The total is divided among the
// top-level queues, and each queue's deserved among its children, by weighted
// water-filling, independently per resource: every claimant gets weight x L for
// a common level L, capped by its real capability and its demand and raised to
// its guarantee (as far as it demands that much), and L is as high as the total
// allows. A queue whose own groups compete with its children's takes part in
// its children's division as one more child of weight 1, without guarantee or
// capability. When the guarantees of one level do not fit in what that level
// divides, the guarantees themselves are water-filled, so deserved shares never
// add up to more than was divided.
//
// Divide costs O(q log q x r) for q queues and r resource names.
func Divide(t *Tree, total resources.List, usage map[string]Usage) *Shares {
	return DivideWithout(t, total, nil, usage)
}

// DivideWithout is Divide where part of the total belongs to no queue:
// outside (pods of other schedulers, pods nobody queues) holds it. The
// top-level queues divide what is left as their deserved shares, so no
// share is overstated by room no queue can get; real capabilities still
// derive from the whole total, since that room comes back when those pods
// end, and a group larger than what is left now is refused for the room,
// not as if its queue could never hold it.
func DivideWithout(t *Tree, total, outside resources.List, usage map[string]Usage) *Shares {
	if t == nil {
		t = BuildTree(nil)
	}
	s := newShares(t, total, usage)
	s.divided = s.dense(total.Less(outside))
	selfDemand := s.addUsage(usage)
	s.sumSubtrees(selfDemand)
	s.divideLevels(selfDemand)
	r := s.r
	for _, i := range t.order {
		s.share[i] = shareOf(s.alloc[i*r:(i+1)*r], nil, s.deserved[i*r:(i+1)*r])
	}
	return s
}

// newShares returns the Shares of t with every resource name that total,
// usage or the specs mention, in name order, and its per-queue amounts
// allocated (zero).
func newShares(t *Tree, total resources.List, usage map[string]Usage) *Shares {
	s := &Shares{tree: t, index: map[string]int{}}
	s.addNames(total)
	for _, u := range usage {
		s.addNames(u.Allocated)
		s.addNames(u.Inflight)
		s.addNames(u.Pending)
	}
	for _, sp := range t.specs {
		s.addNames(sp.Capability)
		s.addNames(sp.Guarantee)
	}
	sort.Strings(s.names)
	for i, k := range s.names {
		s.index[k] = i
	}
	r, n := len(s.names), len(t.specs)
	s.r = r
	s.total = s.dense(total)
	s.inflightAll = make([]int64, r)
	buf := make([]int64, 8*n*r)
	next := func() []int64 {
		out := buf[: n*r : n*r]
		buf = buf[n*r:]
		return out
	}
	s.deserved, s.realCap, s.alloc, s.inflight = next(), next(), next(), next()
	s.demand, s.selfDeserved, s.selfAlloc, s.selfInflight = next(), next(), next(), next()
	s.share = make([]float64, n)
	return s
}

// addNames adds the resource names of l that s does not know yet, before
// newShares sorts them.
func (s *Shares) addNames(l resources.List) {
	for k := range l {
		if _, ok := s.index[k]; !ok {
			s.index[k] = 0
			s.names = append(s.names, k)
		}
	}
}

// addUsage records what each healthy queue's own groups hold and still
// need, and returns each queue's own demand: that, plus what its groups ask
// for when the queue is open (a closed queue's pending work cannot be
// admitted, so it claims no share). Every queue's inflight, known or not,
// counts in the cluster's.
func (s *Shares) addUsage(usage map[string]Usage) []int64 {
	t, r := s.tree, s.r
	selfDemand := make([]int64, len(t.specs)*r)
	for name, u := range usage {
		for k, v := range u.Inflight {
			ri := s.index[k]
			s.inflightAll[ri] = satAdd(s.inflightAll[ri], nn(v))
		}
		i, ok := t.index[name]
		if !ok || t.problems[i] != nil {
			continue
		}
		base := i * r
		for k, v := range u.Allocated {
			s.selfAlloc[base+s.index[k]] = nn(v)
		}
		for k, v := range u.Inflight {
			s.selfInflight[base+s.index[k]] = nn(v)
		}
		if t.specs[i].Open() {
			for k, v := range u.Pending {
				selfDemand[base+s.index[k]] = nn(v)
			}
		}
		for j := base; j < base+r; j++ {
			selfDemand[j] = satAdd(selfDemand[j], satAdd(s.selfAlloc[j], s.selfInflight[j]))
		}
	}
	return selfDemand
}

// sumSubtrees sets each healthy queue's allocated, inflight and demand to
// its own plus its descendants'.
func (s *Shares) sumSubtrees(selfDemand []int64) {
	t, r := s.tree, s.r
	for _, i := range t.order {
		copy(s.alloc[i*r:(i+1)*r], s.selfAlloc[i*r:(i+1)*r])
		copy(s.inflight[i*r:(i+1)*r], s.selfInflight[i*r:(i+1)*r])
		copy(s.demand[i*r:(i+1)*r], selfDemand[i*r:(i+1)*r])
	}
	// Children come after their parent in t.order, so walking it backwards
	// finishes every child before its parent.
	for k := len(t.order) - 1; k >= 0; k-- {
		i := t.order[k]
		p := t.parent[i]
		if p < 0 {
			continue
		}
		for j := range r {
			s.alloc[p*r+j] = satAdd(s.alloc[p*r+j], s.alloc[i*r+j])
			s.inflight[p*r+j] = satAdd(s.inflight[p*r+j], s.inflight[i*r+j])
			s.demand[p*r+j] = satAdd(s.demand[p*r+j], s.demand[i*r+j])
		}
	}
}

// divideLevels divides the total among the top-level queues, then each
// queue's deserved share among its children (and its own groups), parents
// before children; a leaf's own groups deserve all of its share.
func (s *Shares) divideLevels(selfDemand []int64) {
	t, r := s.tree, s.r
	d := divider{s: s, selfDemand: selfDemand}
	d.level(t.top, -1, s.total, s.divided)
	for _, i := range t.order {
		if len(t.children[i]) > 0 {
			d.level(t.children[i], i, s.realCap[i*r:(i+1)*r], s.deserved[i*r:(i+1)*r])
		} else {
			copy(s.selfDeserved[i*r:(i+1)*r], s.deserved[i*r:(i+1)*r])
		}
	}
}

// divider holds the scratch space of one Divide.
type divider struct {
	s          *Shares
	selfDemand []int64
	gEff       []int64
	claims     []claim
	out        []uint64
	ev         []fillEvent
}

// level divides amount (per resource) among kids, the children of node parent
// (-1 for the root), whose own real capability is parentCap. When parent has
// its own groups they claim a share as one more child of weight 1.
func (d *divider) level(kids []int, parent int, parentCap, amount []int64) {
	s := d.s
	r := s.r
	spec := s.tree.specs
	withSelf := parent >= 0
	m := len(kids)
	if withSelf {
		m++
	}
	d.gEff = slicesGrow(d.gEff, len(kids))
	d.claims = slicesGrow(d.claims, m)
	d.out = slicesGrow(d.out, m)
	for j := range r {
		name := s.names[j]
		var sumG u128
		for k, c := range kids {
			g := nn(spec[c].Guarantee[name])
			if cp, ok := spec[c].Capability[name]; ok {
				g = min(g, nn(cp))
			}
			d.gEff[k] = g
			sumG = sumG.add(u128of(uint64(g)))
		}
		for k, c := range kids {
			// What the parent may hold, minus the other siblings' guarantees.
			others := sumG.sub(u128of(uint64(d.gEff[k])))
			rc := int64(0)
			if others.cmp(u128of(uint64(parentCap[j]))) < 0 {
				rc = parentCap[j] - int64(others.lo)
			}
			if cp, ok := spec[c].Capability[name]; ok {
				rc = min(rc, nn(cp))
			}
			s.realCap[c*r+j] = rc
			hi := min(rc, s.demand[c*r+j])
			d.claims[k] = claim{
				w:  uint64(spec[c].EffectiveWeight()),
				lo: uint64(min(d.gEff[k], hi)),
				hi: uint64(hi),
			}
		}
		if withSelf {
			room := int64(0)
			if sumG.cmp(u128of(uint64(parentCap[j]))) < 0 {
				room = parentCap[j] - int64(sumG.lo)
			}
			d.claims[m-1] = claim{w: 1, hi: uint64(min(room, d.selfDemand[parent*r+j]))}
		}
		d.ev = waterFill(uint64(nn(amount[j])), d.claims[:m], d.out[:m], d.ev)
		for k, c := range kids {
			s.deserved[c*r+j] = int64(d.out[k])
		}
		if withSelf {
			s.selfDeserved[parent*r+j] = int64(d.out[m-1])
		}
	}
}

func slicesGrow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// dense returns l as amounts in name order; names Divide did not see are dropped.
func (s *Shares) dense(l resources.List) []int64 {
	out := make([]int64, s.r)
	for k, v := range l {
		if i, ok := s.index[k]; ok {
			out[i] = nn(v)
		}
	}
	return out
}

// sparse returns the amounts of v[i] for which keep(i) holds.
func (s *Shares) sparse(v []int64, keep func(i int) bool) resources.List {
	out := resources.List{}
	for i, x := range v {
		if keep(i) {
			out[s.names[i]] = x
		}
	}
	return out
}

// Tree returns the tree the shares were computed for.
func (s *Shares) Tree() *Tree { return s.tree }

// Total returns the cluster total the shares divide.
func (s *Shares) Total() resources.List {
	return s.sparse(s.total, func(i int) bool { return s.total[i] != 0 })
}

// Get returns the fair-share view of the named queue; false when the queue is
// unknown or broken.
func (s *Shares) Get(name string) (QueueShare, bool) {
	i, ok := s.tree.index[name]
	if !ok || s.tree.problems[i] != nil {
		return QueueShare{}, false
	}
	r := s.r
	base := i * r
	spec := s.tree.specs[i]
	nonZero := func(v []int64) resources.List {
		return s.sparse(v[base:base+r], func(j int) bool { return v[base+j] != 0 })
	}
	return QueueShare{
		Deserved: s.sparse(s.deserved[base:base+r], func(j int) bool {
			return s.deserved[base+j] != 0 || s.demand[base+j] != 0
		}),
		RealCapability: s.sparse(s.realCap[base:base+r], func(j int) bool {
			_, capped := spec.Capability[s.names[j]]
			return capped || s.total[j] != 0 || s.demand[base+j] != 0
		}),
		Allocated: nonZero(s.alloc),
		Inflight:  nonZero(s.inflight),
		Demand:    nonZero(s.demand),
		Share:     s.share[i],
	}, true
}

// Deserved returns the named queue's deserved share; nil for an unknown or
// broken queue.
func (s *Shares) Deserved(name string) resources.List {
	q, _ := s.Get(name)
	return q.Deserved
}

// Share returns the named queue's share (allocated over deserved); 0 for an
// unknown or broken queue.
func (s *Shares) Share(name string) float64 {
	if i, ok := s.tree.index[name]; ok {
		return s.share[i]
	}
	return 0
}

// shareOf is ShareOf over dense amounts: max over i of (a[i]+b[i]) / d[i];
// b may be nil.
func shareOf(a, b, d []int64) float64 {
	share := 0.0
	for i, x := range a {
		if b != nil {
			x = satAdd(x, b[i])
		}
		if x <= 0 {
			continue
		}
		if d[i] <= 0 {
			return UnboundedShare
		}
		share = max(share, float64(x)/float64(d[i]))
	}
	return share
}

// ShareOf is a queue's share: the largest, over resources, of allocated divided
// by deserved. A resource allocated but not deserved at all makes the share
// UnboundedShare; a queue that holds nothing has share 0.
func ShareOf(allocated, deserved resources.List) float64 {
	share := 0.0
	for k, a := range allocated {
		if a <= 0 {
			continue
		}
		d := deserved[k]
		if d <= 0 {
			return UnboundedShare
		}
		share = max(share, float64(a)/float64(d))
	}
	return share
}

// FormatShare renders a share for Queue status with two decimals ("0.42");
// UnboundedShare renders as "Inf".
func FormatShare(share float64) string {
	if share >= UnboundedShare || math.IsInf(share, 1) {
		return "Inf"
	}
	return strconv.FormatFloat(share, 'f', 2, 64)
}

// swap reports whether preemption within the group's queue frees at least
// what the group asks of resource a: the group then takes the place of the
// queue's lower-priority pods, and neither the queue nor its ancestors grow,
// so their deserved share does not stand in its way. (The capability check
// keeps counting what preemption frees as before: a queue over its
// capability must not admit more, swap or not.) A queue
// above its deserved share (one that is not reclaimable, say) must still run
// its high-priority work before its low-priority work; without this, its
// preemptors were refused for good ("remaining deserved share 0").
func swap(pre []int64, a amount) bool { return a.v > 0 && pre[a.r] >= a.v }
