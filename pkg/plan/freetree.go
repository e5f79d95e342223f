package plan

import "math"

// freeTree is a tournament tree over the nodes' free room now: each inner
// entry holds, per resource, the largest amount among the nodes below it.
// Backfill's first-fit asks it for the next node at or after an index that
// may hold a request, skipping whole ranges of full nodes: in a busy
// cluster a job that fits nowhere is refused at the root, O(resources),
// instead of after visiting every node. Commit updates it in O(log nodes x
// resources).
type freeTree struct {
	r, size int
	max     []int64 // 2 x size x r; entry 1 is the root, leaves from size
}

// reset builds the tree over free (n x r), O(n x r).
func (f *freeTree) reset(free []int64, n, r int) {
	f.r, f.size = r, 1
	for f.size < n {
		f.size *= 2
	}
	f.max = fill(f.max, 2*f.size*r, math.MinInt64)
	copy(f.max[f.size*r:], free[:n*r])
	for i := f.size - 1; i >= 1; i-- {
		f.pull(i)
	}
}

func (f *freeTree) pull(i int) {
	for j := range f.r {
		f.max[i*f.r+j] = max(f.max[2*i*f.r+j], f.max[(2*i+1)*f.r+j])
	}
}

// update copies node n's free row and refreshes its ancestors.
func (f *freeTree) update(n int, row []int64) {
	i := f.size + n
	copy(f.max[i*f.r:(i+1)*f.r], row)
	for i /= 2; i >= 1; i /= 2 {
		f.pull(i)
	}
}

// next returns the first node >= from whose free room may hold req (every
// requested amount at most the node's), or -1. Entries above the leaves
// mix nodes, so a "may" can be a false alarm, never a miss.
func (f *freeTree) next(from int, req []int64) int {
	if f.size == 0 || from >= f.size {
		return -1
	}
	return f.find(1, 0, f.size, from, req)
}

func (f *freeTree) find(i, lo, hi, from int, req []int64) int {
	if hi <= from || !fitsRow(req, f.max[i*f.r:(i+1)*f.r]) {
		return -1
	}
	if hi-lo == 1 {
		return lo
	}
	mid := (lo + hi) / 2
	if n := f.find(2*i, lo, mid, from, req); n >= 0 {
		return n
	}
	return f.find(2*i+1, mid, hi, from, req)
}
