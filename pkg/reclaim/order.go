package reclaim

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// cheaper: victims a are a better choice than b: fewer disruption budget
// violations, fewer pods, then a lower highest priority, then younger
// (their longest-running pod started later).
func cheaper(a, b []option) bool {
	na, da, pa, sa := summarize(a)
	nb, db, pb, sb := summarize(b)
	if da != db {
		return da < db
	}
	if na != nb {
		return na < nb
	}
	if pa != pb {
		return pa < pb
	}
	return sa.After(sb)
}

// summarize returns the pod count, disruption budget violations, highest
// priority and earliest start of a set of options.
func summarize(opts []option) (n, disruptive int, prio int32, earliest time.Time) {
	prio = math.MinInt32
	for i, o := range opts {
		n += len(o.pods)
		disruptive += o.disruptive
		prio = max(prio, o.priority)
		if i == 0 || o.earliest.Before(earliest) {
			earliest = o.earliest
		}
	}
	return n, disruptive, prio, earliest
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// compareRequests orders requests by cpu, then memory, then the rest by name.
func compareRequests(a, b resources.List) int {
	if c := cmp.Compare(a[resources.CPU], b[resources.CPU]); c != 0 {
		return c
	}
	if c := cmp.Compare(a["memory"], b["memory"]); c != 0 {
		return c
	}
	for _, k := range sortedNames(a, b) {
		if c := cmp.Compare(a[k], b[k]); c != 0 {
			return c
		}
	}
	return 0
}

func sortedNames(ls ...resources.List) []string {
	var out []string
	for _, l := range ls {
		for k := range l {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// WithSiblings appends to members the need largest of siblings (the
// unbound members of a gang besides the pod being scheduled). Which siblings
// will run is not known, so the largest are counted: room for them is room
// for any. siblings is reordered.
func WithSiblings(members, siblings []resources.List, need int) []resources.List {
	slices.SortStableFunc(siblings, func(a, b resources.List) int { return compareRequests(b, a) })
	return append(members, siblings[:min(max(need, 0), len(siblings))]...)
}

// PickSiblings returns the indexes of the need largest of siblings, largest
// first: the members WithSiblings counts, for a caller that must know which
// pods they are. siblings is not reordered.
func PickSiblings(siblings []resources.List, need int) []int {
	idx := make([]int, len(siblings))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return compareRequests(siblings[b], siblings[a]) })
	return idx[:min(max(need, 0), len(idx))]
}
