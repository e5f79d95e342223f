package noderoom

import (
	"encoding/json"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// Pass is one admission pass's working copy of every node's free room. It
// is kept from pass to pass so that its slices are reused: Prepare lays the
// room out again, re-sorting the node names only when nodes came or went.
// Fields are read only outside this package, but for Free, which the
// caller's placement changes within the pass.
type Pass struct {
	// Names are the known nodes in name order: the same first-fit order
	// every pass, so that reservations and placements are stable. Index
	// maps a name to its position; Nodes[i] is Names[i]'s room.
	Names []string
	Index map[string]int
	Nodes []*Node
	// Resources are the pass's resource names (those of the cluster's
	// total), in name order; ResourceIndex maps a name to its position.
	// ResourceGen counts changes of them, for what callers keep between
	// passes that depends on the layout.
	Resources     []string
	ResourceIndex map[string]int
	ResourceGen   uint64
	// NodeGen counts changes of Names, as ResourceGen does of Resources.
	NodeGen uint64
	// Free is the working room: each node's allocatable less what its
	// bound pods request, per resource.
	Free placement.Room

	rooms    *Rooms
	prevR    []string
	eligible map[string][]int32 // per constraint signature, once a pass
	// untainted lists the untainted nodes, once a pass (haveUnt).
	untainted []int32
	haveUnt   bool
	// starts remembers, per request and node list, where the last plain
	// search found the first node with room: the working room only shrinks
	// within a pass (a check undoes itself, a commit takes), so the nodes
	// before it cannot have room later in the pass.
	starts map[startKey]int
	// slab holds the classes' request vectors, reused from pass to pass.
	slab []int64
}

// startKey identifies a class for Pass.starts: its request (the first four
// resources; classes with more are not remembered) and its node list.
type startKey struct {
	req   [4]int64
	nodes *int32
	n     int
}

// Prepare lays out rooms for a new pass over the resources of total: the
// node order (again only when nodes came or went), the resource index and
// the free room, with nothing blocked and nothing remembered from the last
// pass. O(nodes x resources).
func (p *Pass) Prepare(rooms *Rooms, total resources.List) {
	p.rooms = rooms
	p.indexResources(total)
	if rooms.changed || p.Index == nil {
		p.indexNodes()
		rooms.changed = false
	}
	p.freeRoom()
	p.Free.Blocked = nil
	clear(p.eligible)
	if p.starts == nil {
		p.starts = map[startKey]int{}
	}
	clear(p.starts)
	p.slab = p.slab[:0]
	p.haveUnt = false
}

func (p *Pass) indexResources(total resources.List) {
	p.Resources = p.Resources[:0]
	for k := range total {
		p.Resources = append(p.Resources, k)
	}
	sort.Strings(p.Resources)
	if !slices.Equal(p.Resources, p.prevR) {
		p.ResourceGen++
		p.prevR = append(p.prevR[:0], p.Resources...)
	}
	if p.ResourceIndex == nil {
		p.ResourceIndex = map[string]int{}
	}
	clear(p.ResourceIndex)
	for j, k := range p.Resources {
		p.ResourceIndex[k] = j
	}
}

func (p *Pass) indexNodes() {
	p.NodeGen++
	p.Names = p.Names[:0]
	for name, n := range p.rooms.nodes {
		if n.Obj != nil {
			p.Names = append(p.Names, name)
		}
	}
	sort.Strings(p.Names)
	p.Index = make(map[string]int, len(p.Names))
	for i, n := range p.Names {
		p.Index[n] = i
	}
}

// freeRoom fills Free: each node's allocatable less what its bound pods
// request, per resource, and the most any node has free.
func (p *Pass) freeRoom() {
	r := len(p.Resources)
	p.Nodes = p.Nodes[:0]
	p.Free.R = r
	p.Free.Free = growInt64(p.Free.Free, len(p.Names)*r)
	for i, name := range p.Names {
		n := p.rooms.nodes[name]
		p.Nodes = append(p.Nodes, n)
		for j, k := range p.Resources {
			p.Free.Free[i*r+j] = n.Alloc[k] - n.Used[k]
		}
	}
	p.Free.Max = growInt64(p.Free.Max, r)
	for j := range r {
		m := int64(0)
		for i := range p.Names {
			m = max(m, p.Free.Free[i*r+j])
		}
		p.Free.Max[j] = m
	}
}

// ClassOf is the class of n pods like pod asking for req: the request over
// the pass's resources and the nodes the pod may use. A request for a
// resource no node has fits nowhere. Its request vector lives in the
// pass's slab: valid until the next Prepare.
func (p *Pass) ClassOf(pod *v1.Pod, req resources.List, n int) placement.Class {
	r := p.Free.R
	if len(p.slab)+r > cap(p.slab) {
		// A new chunk: classes made so far keep pointing into the old one.
		p.slab = make([]int64, 0, max(4096, 2*cap(p.slab)))
	}
	start := len(p.slab)
	p.slab = append(p.slab, make([]int64, r)...)
	c := placement.Class{Request: p.slab[start : start+r : start+r], Count: n, Nodes: p.EligibleFor(pod)}
	matched := 0
	for j, k := range p.Resources {
		if v, ok := req[k]; ok {
			matched++
			c.Request[j] = max(v, 0)
		}
	}
	if matched < len(req) {
		for k, v := range req {
			if _, ok := p.ResourceIndex[k]; !ok && v > 0 {
				c.Nodes = []int32{}
			}
		}
	}
	return c
}

// Mark returns the slab's length, and Release gives back what ClassOf took
// since: for a class that was merged into another and is not kept.
func (p *Pass) Mark() int { return len(p.slab) }

// Release drops the request vectors made since mark (Mark).
func (p *Pass) Release(mark int) {
	if len(p.slab) > mark {
		p.slab = p.slab[:mark]
	}
}

// Unconstrained reports whether pod may use every node: no node selector,
// no required node affinity, and no node has a taint that matters.
func (p *Pass) Unconstrained(pod *v1.Pod) bool {
	if p.rooms.Tainted() || len(pod.Spec.NodeSelector) > 0 {
		return false
	}
	a := pod.Spec.Affinity
	return a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil
}

// Start is where the last plain search for a class like c found its first
// node with room in this pass (0 when none is remembered).
func (p *Pass) Start(c placement.Class) int {
	if key, ok := keyOf(c); ok {
		return p.starts[key]
	}
	return 0
}

// SetStart remembers first as where a class like c found its first node.
func (p *Pass) SetStart(c placement.Class, first int) {
	if key, ok := keyOf(c); ok {
		p.starts[key] = first
	}
}

func keyOf(c placement.Class) (startKey, bool) {
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

// EligibleFor lists the nodes pod may use by its node selector, required
// node affinity and NoSchedule/NoExecute taints (the upstream helpers the
// NodeAffinity and TaintToleration plugins use); nil means every node. Pods
// with the same constraints share one list per pass, so a gang made from one
// template costs one scan of the nodes.
func (p *Pass) EligibleFor(pod *v1.Pod) []int32 {
	spec := &pod.Spec
	affine := len(spec.NodeSelector) > 0 ||
		(spec.Affinity != nil && spec.Affinity.NodeAffinity != nil && spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil)
	tainted := p.rooms.Tainted()
	if !affine && !tainted {
		return nil
	}
	if !affine && len(spec.Tolerations) == 0 {
		return p.untaintedNodes()
	}
	var na *v1.NodeSelector
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		na = spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	tol := spec.Tolerations
	if !tainted {
		tol = nil
	}
	sig, _ := json.Marshal(struct {
		S map[string]string
		A *v1.NodeSelector
		T []v1.Toleration
	}{spec.NodeSelector, na, tol})
	if l, ok := p.eligible[string(sig)]; ok {
		return l
	}
	aff := nodeaffinity.GetRequiredNodeAffinity(pod)
	out := []int32{}
	for i, n := range p.Nodes {
		if ok, err := aff.Match(n.Obj); err != nil || !ok {
			continue
		}
		if n.Tainted && !tolerated(n.Obj, spec.Tolerations) {
			continue
		}
		out = append(out, int32(i))
	}
	if p.eligible == nil {
		p.eligible = map[string][]int32{}
	}
	p.eligible[string(sig)] = out
	return out
}

// untaintedNodes lists the nodes without a taint that matters, once a pass.
func (p *Pass) untaintedNodes() []int32 {
	if !p.haveUnt {
		p.untainted = p.untainted[:0]
		for i, n := range p.Nodes {
			if !n.Tainted {
				p.untainted = append(p.untainted, int32(i))
			}
		}
		p.haveUnt = true
	}
	return p.untainted
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

func growInt64(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n)
	}
	return s[:n]
}
