package queue

import (
	"fmt"
	"sort"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// Use is one queue's own amounts, not its descendants', as CapabilityFit
// reads them: what its bound pods hold (Allocated), what its admitted units
// still reserve (Inflight), and what members beyond their gangs' minimum
// hold as reserved but not yet bound (Extra).
type Use struct {
	Allocated, Inflight, Extra resources.List
}

// CapabilityFit reports whether a pod asking request may be placed in queue
// name as a member beyond its gang's minimum: for the queue and every
// ancestor, what its subtree holds (allocated), reserves (inflight and
// extra) and request must stay within its capability. Admission checked the
// gang's minimum against the same limits; the members above it were never
// admitted, so each is checked when it is placed, as Volcano checks every
// task beyond minAvailable at allocation. Deserved shares are not checked:
// reclaim takes back what a queue holds above its share. A queue that is
// unknown sets no limit. use is called once per queue in the subtree of the
// highest limited level, so the cost is O(depth x r + subtree x r) for the r
// resources requested. The message names the first level and resource that
// would be exceeded.
func CapabilityFit(t *Tree, name string, request resources.List, use func(queue string) Use) (bool, string) {
	s := sumCapabilityChain(t, name, request, use)
	if s == nil {
		return true, ""
	}
	for k := 0; k <= s.top; k++ {
		spec := t.specs[s.chain[k]]
		for j, n := range s.names {
			c, ok := spec.Capability[n]
			if !ok {
				continue
			}
			al, re := max(s.alloc[k*s.r+j], 0), max(s.resv[k*s.r+j], 0)
			if satAdd(satAdd(al, re), request[n]) > c {
				return false, fmt.Sprintf("queue %s: %s capability %s, allocated %s, reserved %s, this member needs %s",
					spec.Name, n, resources.Format(n, c), resources.Format(n, al), resources.Format(n, re), resources.Format(n, request[n]))
			}
		}
	}
	return true, ""
}

// Deficit is how far one level of a queue's chain would be over its
// capability: the room that must leave the level's subtree (the queue and
// its descendants) before the work asking for it may be placed.
type Deficit struct {
	// Queue is the limited level; Subtree lists it and its descendants,
	// where a pod's leaving counts.
	Queue   string
	Subtree []string
	// Over is the amount over capability, per resource (all positive).
	Over resources.List
}

// CapabilityDeficits is the placement-time check of an admitted unit's
// minimum: for queue name and every ancestor with a capability on what
// request asks, what its subtree holds (allocated), reserves (inflight and
// extra, the unit's own excluded by use) and request exceed that
// capability. None when everything fits, which is the case for every unit
// admitted on free room, since admission keeps allocated + inflight within
// capability. A unit admitted on room that preemption or reclaim would free
// (lower-priority pods of its queue, or what siblings hold above their
// deserved share) has a deficit until those pods leave: placed on nodes
// that happen to have room, its members would otherwise take the queue past
// its capability without any eviction. Cost as for CapabilityFit.
func CapabilityDeficits(t *Tree, name string, request resources.List, use func(queue string) Use) []Deficit {
	s := sumCapabilityChain(t, name, request, use)
	if s == nil {
		return nil
	}
	var out []Deficit
	for k := 0; k <= s.top; k++ {
		spec := t.specs[s.chain[k]]
		var over resources.List
		for j, n := range s.names {
			c, ok := spec.Capability[n]
			if !ok {
				continue
			}
			used := satAdd(satAdd(max(s.alloc[k*s.r+j], 0), max(s.resv[k*s.r+j], 0)), request[n])
			if used > c {
				if over == nil {
					over = resources.List{}
				}
				over[n] = used - c
			}
		}
		if over == nil {
			continue
		}
		// The subtree is listed only for a deficit, the rare case: the
		// check that passes walks the queues once, without collecting.
		d := Deficit{Queue: spec.Name, Over: over, Subtree: t.subtree(s.chain[k])}
		sort.Strings(d.Subtree)
		out = append(out, d)
	}
	return out
}

// chainSums are the sums over a queue's chain that the capability checks
// read: per chain level k (0 is the queue) and requested resource j,
// alloc[k*r+j] and resv[k*r+j] over the level's subtree.
type chainSums struct {
	chain       []int
	top         int
	names       []string
	r           int
	alloc, resv []int64
}

type chainMember struct{ node, at int }

// sumCapabilityChain sums, for queue name and its ancestors up to the
// highest one limiting a resource of request, what their subtrees hold and
// reserve; nil when no level limits request or the queue is unknown.
func sumCapabilityChain(t *Tree, name string, request resources.List, use func(queue string) Use) *chainSums {
	if t == nil {
		return nil
	}
	i, ok := t.index[name]
	if !ok {
		return nil
	}
	names := make([]string, 0, len(request))
	for n, v := range request {
		if v > 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	limits := func(l int) bool {
		for _, n := range names {
			if _, ok := t.specs[l].Capability[n]; ok {
				return true
			}
		}
		return false
	}
	// The chain from the queue up; levels above the highest one with a
	// limit on the requested resources need no sums.
	var chain []int
	top := -1
	for l := i; l >= 0; l = t.parent[l] {
		chain = append(chain, l)
		if limits(l) {
			top = len(chain) - 1
		}
	}
	if top < 0 {
		return nil
	}
	chain = chain[:top+1]
	r := len(names)
	s := &chainSums{chain: chain, top: top, names: names, r: r,
		alloc: make([]int64, len(chain)*r), resv: make([]int64, len(chain)*r)}
	t.walkChain(chain, use, func(at int, u Use) {
		for j, n := range names {
			s.alloc[at*r+j] += u.Allocated[n]
			s.resv[at*r+j] += u.Inflight[n] + u.Extra[n]
		}
	})
	for k := 1; k <= top; k++ {
		for j := 0; j < r; j++ {
			s.alloc[k*r+j] += s.alloc[(k-1)*r+j]
			s.resv[k*r+j] += s.resv[(k-1)*r+j]
		}
	}
	return s
}

// walkChain calls add once for every queue of the subtree of chain's last
// level (a queue and its ancestors, from the queue up), with the deepest
// chain level the queue lies under and its use: summing the levels upwards
// afterwards gives each level its subtree's total, walking the subtree once
// whatever the depth.
func (t *Tree) walkChain(chain []int, use func(queue string) Use, add func(at int, u Use)) {
	top := len(chain) - 1
	stack := []chainMember{{chain[top], top}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		add(f.at, use(t.specs[f.node].Name))
		for _, c := range t.children[f.node] {
			at := f.at
			if at > 0 && chain[at-1] == c {
				at--
			}
			stack = append(stack, chainMember{c, at})
		}
	}
}

// subtree lists the names of queue i and its descendants.
func (t *Tree) subtree(i int) []string {
	var out []string
	stack := []int{i}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, t.specs[n].Name)
		stack = append(stack, t.children[n]...)
	}
	return out
}
