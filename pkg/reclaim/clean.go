package reclaim

// cleanOrder is member m's request's candidates, the eligible nodes where
// room can be made, by their bound as reset left them; computed once a
// round. They are sorted lazily: cheapest stops after the first few nodes
// (in W7, after one), and sorting all 5000 nodes' candidates was a fifth
// of a decision. A heap yields them in compareCandidates' order, a total
// order (the node breaks ties), so the order is the full sort's.
func (s *state) cleanOrder(m int) *request {
	r := s.reqs[m]
	if r.round != s.round {
		r.round, r.order = s.round, r.order[:0]
		if r.rest == nil {
			r.rest = make([]candidate, 0, len(s.eligibleNodes))
		}
		r.rest = r.rest[:0]
		for _, i := range s.eligibleNodes {
			if b, ok := s.bound(i, r.req, true); ok {
				r.rest = append(r.rest, candidate{i, b})
			}
		}
		for j := len(r.rest)/2 - 1; j >= 0; j-- {
			r.down(j)
		}
	}
	return r
}

// at returns the k-th candidate in order; false past the last.
func (r *request) at(k int) (candidate, bool) {
	for k >= len(r.order) {
		if len(r.rest) == 0 {
			return candidate{}, false
		}
		n := len(r.rest) - 1
		r.order = append(r.order, r.rest[0])
		r.rest[0] = r.rest[n]
		r.rest = r.rest[:n]
		r.down(0)
	}
	return r.order[k], true
}

// down restores the heap below rest[j].
func (r *request) down(j int) {
	h := r.rest
	for {
		l := 2*j + 1
		if l >= len(h) {
			return
		}
		c := l
		if rr := l + 1; rr < len(h) && compareCandidates(h[rr], h[l]) < 0 {
			c = rr
		}
		if compareCandidates(h[c], h[j]) >= 0 {
			return
		}
		h[j], h[c] = h[c], h[j]
		j = c
	}
}
