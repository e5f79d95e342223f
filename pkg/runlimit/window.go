package runlimit

// window is the last len(ring) run times, as bins: a ring in arrival order
// (to know which sample leaves) and a Fenwick tree of counts per bin (to
// rank them). Counts never exceed len(ring) <= maxWindow, so uint16 holds
// every partial sum.
type window struct {
	ring []uint16 // bins; ring[next] is the oldest once n == len(ring)
	next int
	n    int
	tree [treeSize + 1]uint16 // 1-based Fenwick tree over bins 0..treeSize-1
}

// newWindow is an empty window of size samples.
func newWindow(size int) *window {
	return &window{ring: make([]uint16, size)}
}

// push adds a sample in bin b, evicting the oldest when the window is
// full. O(log bins).
func (w *window) push(b int) {
	if w.n == len(w.ring) {
		w.add(int(w.ring[w.next]), ^uint16(0)) // -1
	} else {
		w.n++
	}
	w.ring[w.next] = uint16(b)
	w.next = (w.next + 1) % len(w.ring)
	w.add(b, 1)
}

// add adds d (mod 2^16, so ^0 subtracts one) to bin b's count.
func (w *window) add(b int, d uint16) {
	for i := b + 1; i <= treeSize; i += i & -i {
		w.tree[i] += d
	}
}

// below counts the samples in bins < b.
func (w *window) below(b int) int {
	s := 0
	for i := b; i > 0; i -= i & -i {
		s += int(w.tree[i])
	}
	return s
}

// find is the smallest bin whose cumulative count reaches k (1 <= k <= n):
// the bin of the k-th smallest sample. A descent over the tree's powers of
// two, O(log bins).
func (w *window) find(k int) int {
	pos := 0
	for step := treeSize; step > 0; step >>= 1 {
		if next := pos + step; next <= treeSize && int(w.tree[next]) < k {
			pos = next
			k -= int(w.tree[next])
		}
	}
	return pos // the 1-based index pos+1 is bin pos
}

// quantile is the qm-millionths quantile of the samples not in bins below
// ranFor's (those that may still be longer than ranFor), by nearest rank,
// as the bin's upper edge and at least ranFor+1; with the count m it was
// taken from. ok is false when fewer than minSamples qualify.
func (w *window) quantile(ranFor, qm int64, minSamples int) (s int64, m int, ok bool) {
	c := w.below(bin(ranFor))
	m = w.n - c
	if m < minSamples || m <= 0 {
		return 0, m, false
	}
	k := max(int((qm*int64(m)+999_999)/1_000_000), 1)
	return max(upper(w.find(c+k)), ranFor+1), m, true
}
