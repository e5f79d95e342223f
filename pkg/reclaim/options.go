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
	var out []option
	byRecency := slices.Clone(s.candidates)
	slices.SortFunc(byRecency, func(a, b int) int { return s.comparePods(a, b) })
	for _, i := range byRecency {
		p := &s.in.Pods[i]
		if s.podEligible[i] < 0 && !s.inDeficit(p) {
			continue // only reachable through its whole gang
		}
		if p.Group == "" || s.spare[p.Group] > 0 {
			out = append(out, option{pods: []int{i}, disruptive: b2i(p.Disruptive), priority: p.Priority, started: p.Started, earliest: p.Started})
		}
	}
	if wholeGangs {
		for g, pods := range s.groupPods {
			if s.spare[g] >= s.running[g] || int32(len(pods)) < s.running[g] {
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
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, s.compareOptions)
	return out
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
	s.byNode = make([][]int32, len(s.in.Nodes))
	s.covers = make([][]int, len(s.in.Nodes))
	last := make([]int32, len(s.in.Nodes))  // 1 + the last option filed under a node
	covered := make([]bool, len(s.in.Pods)) // a pod may be a single step and in its whole gang
	for j, o := range opts {
		for _, p := range o.pods {
			i := int(s.podEligible[p])
			if i < 0 {
				continue
			}
			if last[i] != int32(j)+1 {
				last[i] = int32(j) + 1
				s.byNode[i] = append(s.byNode[i], int32(j))
			}
			// A pod's room goes to the first node of its name
			// (podNode): the one to count it for, eligible or not.
			if int(s.podNode[p]) == i && !covered[p] {
				covered[p] = true
				s.covers[i] = append(s.covers[i], p)
			}
		}
	}
	s.boundNodes()
}
