package queue

import (
	"fmt"
	"maps"
	"slices"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// ShareRoom is how much more a queue may be given for members beyond their
// gangs' minimum before it or an ancestor goes above its deserved share: the
// allocate-time check Volcano's proportion plugin makes for every task
// (allocated + task <= deserved). Admission keeps a gang's minimum within
// the deserved shares (check 4); a member above the minimum was never
// admitted, and placed on idle room past its queue's share it would be
// taken back by reclaim as soon as another queue's work within its share
// asks for that room: bound, then evicted. For that check to let an elastic
// gang alone grow into idle room, its pending members beyond the minimum
// must be part of its queue's demand when the shares are divided.
type ShareRoom struct {
	// limited is false when the queue has no share (unknown or broken): no
	// limit then, as CapabilityFit sets none for an unknown queue.
	limited bool
	names   []string
	room    []int64  // per resource of names: the least room over the chain
	at      []string // the level that sets room
	des     []int64  // that level's deserved and use, for the message
	used    []int64
}

// ShareRoomOf computes queue name's ShareRoom from the deserved shares of s
// (the last admission pass) and the current amounts use reports per queue
// (its own, not its descendants'): for the queue and every ancestor, the
// level's deserved less what its subtree holds (Allocated) and reserves
// (Inflight and Extra). use is called once per queue under the queue's
// top-level ancestor, so the cost is O(depth x r + subtree x r) for the r
// resources of s.
func ShareRoomOf(s *Shares, name string, use func(queue string) Use) ShareRoom {
	if s == nil {
		return ShareRoom{}
	}
	t := s.tree
	i, ok := t.index[name]
	if !ok || t.problems[i] != nil {
		return ShareRoom{}
	}
	var chain []int
	for l := i; l >= 0; l = t.parent[l] {
		chain = append(chain, l)
	}
	r, top := s.r, len(chain)-1
	used := make([]int64, len(chain)*r)
	t.walkChain(chain, use, func(at int, u Use) {
		for j, n := range s.names {
			used[at*r+j] = satAdd(used[at*r+j], satAdd(max(u.Allocated[n], 0), satAdd(max(u.Inflight[n], 0), max(u.Extra[n], 0))))
		}
	})
	for k := 1; k <= top; k++ {
		for j := 0; j < r; j++ {
			used[k*r+j] = satAdd(used[k*r+j], used[(k-1)*r+j])
		}
	}
	out := ShareRoom{limited: true, names: s.names, room: make([]int64, r), at: make([]string, r),
		des: make([]int64, r), used: make([]int64, r)}
	for j := 0; j < r; j++ {
		for k, l := range chain {
			d, u := s.deserved[l*r+j], used[k*r+j]
			if room := d - u; k == 0 || room < out.room[j] {
				out.room[j], out.at[j], out.des[j], out.used[j] = room, t.specs[l].Name, d, u
			}
		}
	}
	return out
}

// Fits reports whether a member asking request fits the room; the message
// names the level and resource that would go above its deserved share. A
// resource the shares do not know has no deserved share anywhere: the
// member does not fit until a pass has counted it as demand.
func (sr ShareRoom) Fits(request resources.List) (bool, string) {
	if !sr.limited {
		return true, ""
	}
	// In name order, so that the message is the same every time.
	known := 0
	for j, n := range sr.names {
		v, ok := request[n]
		if !ok {
			continue
		}
		known++
		if v > 0 && v > sr.room[j] {
			return false, fmt.Sprintf("queue %s: %s deserved share %s, held and reserved %s, this member needs %s",
				sr.at[j], n, resources.Format(n, sr.des[j]), resources.Format(n, max(sr.used[j], 0)), resources.Format(n, v))
		}
	}
	if known < len(request) {
		for _, n := range slices.Sorted(maps.Keys(request)) {
			if v := request[n]; v > 0 && !slices.Contains(sr.names, n) {
				return false, fmt.Sprintf("no queue deserves any %s yet: this member needs %s", n, resources.Format(n, v))
			}
		}
	}
	return true, ""
}
