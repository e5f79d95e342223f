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
	if t == nil {
		return true, ""
	}
	i, ok := t.index[name]
	if !ok {
		return true, ""
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
		return true, ""
	}
	chain = chain[:top+1]
	r := len(names)
	alloc := make([]int64, len(chain)*r)
	resv := make([]int64, len(chain)*r)
	// Each queue of the top level's subtree is added to the deepest chain
	// level it lies under (at); the levels are then summed upwards, so the
	// subtree is walked once whatever the depth.
	type frame struct{ node, at int }
	stack := []frame{{chain[top], top}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		u := use(t.specs[f.node].Name)
		for j, n := range names {
			alloc[f.at*r+j] += u.Allocated[n]
			resv[f.at*r+j] += u.Inflight[n] + u.Extra[n]
		}
		for _, c := range t.children[f.node] {
			at := f.at
			if at > 0 && chain[at-1] == c {
				at--
			}
			stack = append(stack, frame{c, at})
		}
	}
	for k := 1; k <= top; k++ {
		for j := 0; j < r; j++ {
			alloc[k*r+j] += alloc[(k-1)*r+j]
			resv[k*r+j] += resv[(k-1)*r+j]
		}
	}
	for k := 0; k <= top; k++ {
		spec := t.specs[chain[k]]
		for j, n := range names {
			c, ok := spec.Capability[n]
			if !ok {
				continue
			}
			al, re := max(alloc[k*r+j], 0), max(resv[k*r+j], 0)
			if satAdd(satAdd(al, re), request[n]) > c {
				return false, fmt.Sprintf("queue %s: %s capability %s, allocated %s, reserved %s, this member needs %s",
					spec.Name, n, resources.Format(n, c), resources.Format(n, al), resources.Format(n, re), resources.Format(n, request[n]))
			}
		}
	}
	return true, ""
}
