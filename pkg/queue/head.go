package queue

// Head returns the keys of the first n ready groups of the named queue, in
// the order an admission pass examines them (as Order, cut at n). It walks
// the queue's heap from its root with a frontier of candidate indexes, so it
// costs O(n log n) whatever the queue's length: the status writer calls it
// for every queue on each period to publish queue positions, where sorting a
// long queue (Order) would be O(pending log pending).
func (p *Pending) Head(queue string, n int) []Key {
	q := p.queues[queue]
	if q == nil || len(q.heap) == 0 || n <= 0 {
		return nil
	}
	h := q.heap
	out := make([]Key, 0, min(n, len(h)))
	// frontier is a binary min-heap of indexes into h, ordered by the
	// entries they point at: the next entry in order is always one of
	// the children of those already taken.
	frontier := make([]int, 1, 2*n+1)
	less := func(i, j int) bool { return h[frontier[i]].before(h[frontier[j]]) }
	for len(out) < n && len(frontier) > 0 {
		top := frontier[0]
		out = append(out, h[top].g.Key)
		last := len(frontier) - 1
		frontier[0] = frontier[last]
		frontier = frontier[:last]
		siftDown(frontier, 0, less)
		for _, c := range [2]int{2*top + 1, 2*top + 2} {
			if c < len(h) {
				frontier = append(frontier, c)
				siftUp(frontier, len(frontier)-1, less)
			}
		}
	}
	return out
}

func siftUp(f []int, i int, less func(i, j int) bool) {
	for i > 0 {
		p := (i - 1) / 2
		if !less(i, p) {
			return
		}
		f[i], f[p] = f[p], f[i]
		i = p
	}
}

func siftDown(f []int, i int, less func(i, j int) bool) {
	for {
		l := 2*i + 1
		if l >= len(f) {
			return
		}
		j := l
		if r := l + 1; r < len(f) && less(r, l) {
			j = r
		}
		if !less(j, i) {
			return
		}
		f[i], f[j] = f[j], f[i]
		i = j
	}
}
