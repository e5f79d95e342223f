package reclaim

import "slices"

// What is taken is kept by pod index and gang id, not in maps keyed by pod
// and gang name: makeRoom takes and gives back whole options on every node
// it tries, and at 5000 nodes the map updates (mapassign_faststr,
// aeshashbody) were most of a decision.

// take adds an option's pods to the victims if its queue can afford it (the
// reclaim rule); an option already (partly) taken adds only its remainder.
func (s *state) take(o option) bool {
	var add []int
	for _, i := range o.pods {
		if !s.taken[i] {
			add = append(add, i)
		}
	}
	if len(add) == 0 {
		return false
	}
	if !o.whole {
		// One by one, a gang gives up at most its spare members. A step
		// that is not whole is one pod: checked before the queue rule,
		// since every member of a gang is offered and most are refused
		// here once its spare members are taken.
		if g := s.podGroup[add[0]]; g >= 0 && s.takenG[g] >= s.spareOf[g] {
			return false
		}
	}
	if !s.affordable(add) {
		return false
	}
	st := o
	st.pods = add
	st.disruptive = s.violations(add)
	s.retake(add)
	s.steps = append(s.steps, st)
	return true
}

// gangsIntact: every gang is either untouched, taken whole, or keeps at
// least minMember running members.
func (s *state) gangsIntact() bool { return s.broken == 0 }

// isBroken: gang g, with n members taken, is left short: some but not all
// of its running members go, more than its spare ones.
func (s *state) isBroken(g int32, n int32) bool { return n < s.running[g] && n > s.spareOf[g] }

// mark sets pod i's taken flag and counts it in its gang (d is +1 or -1),
// keeping broken, the count of gangs left short, up to date.
func (s *state) mark(i int, d int32) {
	s.taken[i] = d > 0
	s.nTaken += int(d)
	if g := s.podGroup[i]; g >= 0 {
		n := s.takenG[g]
		s.broken -= b2i(s.isBroken(g, n))
		s.takenG[g] = n + d
		s.broken += b2i(s.isBroken(g, n+d))
	}
}

func (s *state) untake(pods []int) {
	for _, i := range pods {
		p := &s.in.Pods[i]
		s.mark(i, -1)
		s.spend(p, -1)
		s.mutFree(int(s.podNode[i])).Sub(p.Request)
		s.takenQ[p.Queue].Sub(p.Request)
	}
}

// retake takes pods, which are not taken. Room freed on an ineligible
// node is tracked but never used.
func (s *state) retake(pods []int) {
	for _, i := range pods {
		p := &s.in.Pods[i]
		s.mark(i, 1)
		s.spend(p, 1)
		s.mutFree(int(s.podNode[i])).Add(p.Request)
		s.takenQ[p.Queue] = s.takenQ[p.Queue].Add(p.Request)
	}
}

// victims lists the taken pods, most important first: higher priority, then
// longest running, then ID.
func (s *state) victims() []int {
	out := make([]int, 0, s.nTaken)
	for _, i := range s.candidates {
		if s.taken[i] {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b int) int { return s.comparePods(b, a) })
	return out
}
