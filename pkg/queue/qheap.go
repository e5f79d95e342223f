package queue

// The pass's heap of queues and the scratch-slice helpers of admit.go.

// Queue heap of the pass: priority (higher first), share (lower first), name.
func qbefore(a, b *pqueue) bool {
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.dyn != b.dyn {
		return a.dyn < b.dyn
	}
	return a.name < b.name
}

func (p *Pending) qpush(q *pqueue) {
	h := &p.pass.qheap
	q.hpos = len(*h)
	*h = append(*h, q)
	p.qup(q.hpos)
}

func (p *Pending) qremove(i int) {
	h := &p.pass.qheap
	last := len(*h) - 1
	if i != last {
		(*h)[i] = (*h)[last]
		(*h)[i].hpos = i
	}
	(*h)[last] = nil
	*h = (*h)[:last]
	if i != last {
		p.qdown(i)
		p.qup(i)
	}
}

func (p *Pending) qup(i int) {
	h := p.pass.qheap
	for i > 0 {
		par := (i - 1) / 2
		if !qbefore(h[i], h[par]) {
			break
		}
		h[i], h[par] = h[par], h[i]
		h[i].hpos, h[par].hpos = i, par
		i = par
	}
}

func (p *Pending) qdown(i int) {
	h := p.pass.qheap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		j := l
		if rr := l + 1; rr < len(h) && qbefore(h[rr], h[l]) {
			j = rr
		}
		if !qbefore(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		h[i].hpos, h[j].hpos = i, j
		i = j
	}
}

func growInt64s(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n)
	}
	return s[:n]
}

func growInts(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

func growBools(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	return s[:n]
}
