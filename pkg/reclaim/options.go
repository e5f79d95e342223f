package reclaim

import (
	"cmp"
	"slices"
	"strings"
)

// options lists the steps of the greedy search, best first: lower priority,
// then most recently started, then pod ID. Every member of a gang with
// spare members is a step of its own, wherever it runs, and take stops at
// the spare count: which members go depends on the node that needs room
// (the youngest there first), not on the gang's youngest overall, which may
// run where their room is of no use. With wholeGangs a gang with no spare
// members is also one step.
func (s *state) options(wholeGangs bool) []option {
	// The single steps are the same in both rounds: built once.
	if s.singles == nil {
		s.singles = s.singleOptions()
	}
	singles := s.singles
	if !wholeGangs {
		return singles
	}
	whole := make([]option, 0, len(s.groupPods))
	for g, pods := range s.groupPods {
		if s.spareOf[g] >= s.running[g] || int32(len(pods)) < s.running[g] {
			// A group of one is already offered pod by pod; a gang
			// with members that are not victims (too young, on an
			// ineligible queue) cannot be taken whole.
			continue
		}
		p := s.in.Pods[pods[0]]
		o := option{pods: slices.Clone(pods), priority: p.Priority, whole: true, started: p.Started, earliest: p.Started}
		for _, i := range pods {
			o.disruptive += b2i(s.in.Pods[i].Disruptive)
			t := s.in.Pods[i].Started
			if t.After(o.started) {
				o.started = t
			}
			if t.Before(o.earliest) {
				o.earliest = t
			}
		}
		whole = append(whole, o)
	}
	// Sorted by index: a stable sort moves its elements O(n log n) times
	// each, and W7's thousands of whole gangs made moving the options
	// themselves a good part of a decision.
	byOrder := make([]int32, len(whole))
	for j := range byOrder {
		byOrder[j] = int32(j)
	}
	slices.SortStableFunc(byOrder, func(a, b int32) int { return s.compareOptions(whole[a], whole[b]) })
	// A stable merge: on a tie the single pod, which came first, stays first.
	out := make([]option, 0, len(singles)+len(whole))
	for len(singles) > 0 && len(byOrder) > 0 {
		if w := whole[byOrder[0]]; s.compareOptions(singles[0], w) <= 0 {
			out, singles = append(out, singles[0]), singles[1:]
		} else {
			out, byOrder = append(out, w), byOrder[1:]
		}
	}
	out = append(out, singles...)
	for _, j := range byOrder {
		out = append(out, whole[j])
	}
	return out
}

// singleOptions lists the single steps, best first.
func (s *state) singleOptions() []option {
	byRecency := slices.Clone(s.candidates)
	slices.SortFunc(byRecency, func(a, b int) int { return s.comparePods(a, b) })
	// Single pods come in byRecency order, which is compareOptions' order
	// among single pods that all break a budget or all do not; so their
	// stable sort is a stable partition, and only the whole gangs (at most
	// one per gang) are sorted and merged in. Sorting the tens of thousands
	// of single pods of a large cluster again was a good part of a decision.
	one := make([]int, len(byRecency)) // the single steps' pods, one each
	calm := make([]option, 0, len(byRecency))
	var disruptive []option
	for j, i := range byRecency {
		p := &s.in.Pods[i]
		if s.podEligible[i] < 0 && !s.inDeficit(p) {
			continue // only reachable through its whole gang
		}
		if g := s.podGroup[i]; g < 0 || s.spareOf[g] > 0 {
			one[j] = i
			o := option{pods: one[j : j+1 : j+1], disruptive: b2i(p.Disruptive), priority: p.Priority, started: p.Started, earliest: p.Started}
			if p.Disruptive {
				disruptive = append(disruptive, o)
			} else {
				calm = append(calm, o)
			}
		}
	}
	return append(calm, disruptive...)
}

// compareOptions orders the steps: those that break no budget first, then
// lower priority, then most recently started, then single pods before
// whole gangs (fewer victims), then pod ID.
func (s *state) compareOptions(a, b option) int {
	if c := cmp.Compare(b2i(a.disruptive > 0), b2i(b.disruptive > 0)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.priority, b.priority); c != 0 {
		return c
	}
	if c := b.started.Compare(a.started); c != 0 {
		return c
	}
	if a.whole != b.whole { // fewer victims
		if a.whole {
			return 1
		}
		return -1
	}
	return strings.Compare(s.in.Pods[a.pods[0]].ID, s.in.Pods[b.pods[0]].ID)
}

// index files the options under the eligible nodes they free room on, and
// notes for each node the pods there that the options can take (covers).
func (s *state) index(opts []option) {
	// Count first, then cut every node's lists from one array each: at
	// 5000 nodes growing them one append at a time was a good part of a
	// decision.
	s.byNode = make([][]int32, len(s.in.Nodes))
	s.covers = make([][]int, len(s.in.Nodes))
	last := make([]int32, len(s.in.Nodes))  // 1 + the last option filed under a node
	covered := make([]bool, len(s.in.Pods)) // a pod may be a single step and in its whole gang
	nOpts, nPods := make([]int32, len(s.in.Nodes)), make([]int32, len(s.in.Nodes))
	each := func(file func(j, i, p int, first bool)) {
		clear(last)
		clear(covered)
		for j, o := range opts {
			for _, p := range o.pods {
				i := int(s.podEligible[p])
				if i < 0 {
					continue
				}
				first := last[i] != int32(j)+1
				last[i] = int32(j) + 1
				// A pod's room goes to the first node of its name
				// (podNode): the one to count it for, eligible or not.
				take := int(s.podNode[p]) == i && !covered[p]
				if take {
					covered[p] = true
				} else {
					p = -1
				}
				file(j, i, p, first)
			}
		}
	}
	each(func(j, i, p int, first bool) {
		nOpts[i] += int32(b2i(first))
		nPods[i] += int32(b2i(p >= 0))
	})
	total := 0 // a whole gang is filed under each of its nodes
	for _, n := range nOpts {
		total += int(n)
	}
	optArr, podArr := make([]int32, 0, total), make([]int, 0, len(s.in.Pods))
	for i := range s.in.Nodes {
		s.byNode[i] = optArr[len(optArr) : len(optArr) : len(optArr)+int(nOpts[i])]
		optArr = optArr[:len(optArr)+int(nOpts[i])]
		s.covers[i] = podArr[len(podArr) : len(podArr) : len(podArr)+int(nPods[i])]
		podArr = podArr[:len(podArr)+int(nPods[i])]
	}
	each(func(j, i, p int, first bool) {
		if first {
			s.byNode[i] = append(s.byNode[i], int32(j))
		}
		if p >= 0 {
			s.covers[i] = append(s.covers[i], p)
		}
	})
	s.boundNodes()
}
