package queue

import (
	"fmt"
	"sort"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// ShareFit reports whether a member beyond its gang's minimum may be given to
// a queue without the queue or an ancestor going above its deserved share:
// the allocate-time check Volcano's proportion plugin makes for every task
// (allocated + task <= deserved). Admission keeps a gang's minimum within the
// deserved shares (the fair-share check); a member above the minimum was
// never admitted, and placed on idle room past its queue's share it would be
// taken back by reclaim as soon as another queue's work within its share asks
// for that room: bound, then evicted. For that check to let an elastic gang
// alone grow into idle room, its pending members beyond the minimum must be
// part of its queue's demand when the shares are divided.
//
// It checks request against the deserved shares of s (the last
// admission pass) and the current amounts use reports per queue (its own,
// not its descendants'): for the queue and every ancestor, what the level's
// subtree holds (Allocated) and reserves (Inflight and Extra) plus request
// must stay within the level's deserved share, on every requested
// resource. The message names the first level, from the queue up, and
// resource that would go above it. use is called once per queue under the
// queue's top-level ancestor, so the cost is O(depth x r + subtree x r) for
// the r requested resources.
//
// preemptible is what lower-priority pods of the queue hold (nil when
// preemption is off): a resource it covers is left out, as admission's swap
// rule leaves it out of the fair-share check, since placing the member by
// evicting them leaves the queue holding no more. The member may still find
// free room and bind above the share; admission accepts the same for a group.
func ShareFit(s *Shares, name string, request, preemptible resources.List, use func(queue string) Use) (bool, string) {
	if s == nil {
		return true, ""
	}
	t := s.tree
	i, ok := t.index[name]
	if !ok || t.problems[i] != nil {
		// No share, no limit: as CapabilityFit sets none for an unknown queue.
		return true, ""
	}
	// The requested resources, in name order so that the message is the
	// same every time; one the shares do not know has no deserved share
	// anywhere, and fits nothing until a pass has counted it as demand.
	names := make([]string, 0, len(request))
	for n, v := range request {
		if v > 0 && preemptible[n] < v {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	pos := make([]int, len(names))
	for j, n := range names {
		p, known := s.index[n]
		if !known {
			return false, fmt.Sprintf("no queue deserves any %s yet: this member needs %s", n, resources.Format(n, request[n]))
		}
		pos[j] = p
	}
	var chain []int
	for l := i; l >= 0; l = t.parent[l] {
		chain = append(chain, l)
	}
	r := len(names)
	used := make([]int64, len(chain)*r)
	t.walkChain(chain, use, func(at int, u Use) {
		for j, n := range names {
			used[at*r+j] = satAdd(used[at*r+j], satAdd(max(u.Allocated[n], 0), satAdd(max(u.Inflight[n], 0), max(u.Extra[n], 0))))
		}
	})
	for k := 1; k < len(chain); k++ {
		for j := 0; j < r; j++ {
			used[k*r+j] = satAdd(used[k*r+j], used[(k-1)*r+j])
		}
	}
	for j, n := range names {
		v := request[n]
		for k, l := range chain {
			d, u := s.deserved[l*s.r+pos[j]], used[k*r+j]
			if v > d-u {
				return false, fmt.Sprintf("queue %s: %s deserved share %s, held and reserved %s, this member needs %s",
					t.specs[l].Name, n, resources.Format(n, d), resources.Format(n, u), resources.Format(n, v))
			}
		}
	}
	return true, ""
}
