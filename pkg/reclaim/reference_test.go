package reclaim_test

// This file and reference_rules_test.go are the reference oracle for
// TestDecideEquivalence: a verbatim copy of Decide as it was at commit
// b916ffb (reclaim.go, order.go, deficit.go, budget.go, share.go), before
// the search was bounded for issue 21. It is the one place a copy of the
// algorithm is kept, on purpose: the bounded search must return exactly
// what this exhaustive one returns. It lives in the external test package,
// so it cannot call the package's internals by accident, and the dot import
// keeps the copy textually identical to the original apart from the name
// referenceDecide. Do not "fix" or speed it up; when Decide's decisions are
// meant to change, update both deliberately.

import (
	"cmp"
	"slices"
	"strings"
	"time"

	. "github.com/caldera-sched/caldera/pkg/reclaim"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// referenceDecide returns the plan that lets the whole preemptor fit with the fewest
// and least important victims, or ok=false with the reason.
//
// Reclaim is tried when the preemptor's queue would stay within its deserved
// share with the whole group placed (allocated + members <= deserved on every
// resource the members request): its victims are pods of other reclaimable
// queues, taken only while their queue stays at or above its deserved share
// on a resource the pod frees, and never below its guarantee. Because both
// sides stop at deserved, a reclaim cannot be reclaimed back: once shares are
// at deserved no further evictions follow. Preempt is tried next: victims are
// pods of lower-priority groups of the same queue.
//
// Pods whose eviction would violate a PodDisruptionBudget are taken last.
// Victim gangs keep minMember running members: a gang gives up only members
// above minMember (most recently started first), or all of them. Plans made
// of single pods are preferred; whole gangs are taken only when no such plan
// exists. Within that, lower priority goes first, then the most recently
// started. Pods younger than MinRuntime are never victims.
//
// The fit is a resource check: every member placed first-fit-decreasing on
// eligible nodes with the victims' requests freed. The caller re-runs the
// scheduler's filters for the first member on Plan.Node.
func referenceDecide(in Input) (Plan, bool, string) {
	if len(in.Preemptor.Members) == 0 {
		return Plan{}, false, "nothing to place"
	}
	need := resources.List{}
	for _, m := range in.Preemptor.Members {
		need.Add(m)
	}
	var reasons []string
	if in.Options.Reclaim {
		if why := withinDeserved(in.Queues[in.Preemptor.Queue], need); why != "" {
			reasons = append(reasons, "no reclaim: queue "+in.Preemptor.Queue+" "+why)
		} else if p, ok, why := search(in, Reclaim); ok {
			return p, true, ""
		} else {
			reasons = append(reasons, "no reclaim: "+why)
		}
	}
	if in.Options.Preempt {
		if p, ok, why := search(in, Preempt); ok {
			return p, true, ""
		} else {
			reasons = append(reasons, "no preemption: "+why)
		}
	}
	if len(reasons) == 0 {
		return Plan{}, false, "reclaim and preemption are disabled"
	}
	return Plan{}, false, strings.Join(reasons, "; ")
}

// option is one step of the greedy search: a single pod, or a whole gang.
type option struct {
	pods       []int
	disruptive int // pods that violate a PodDisruptionBudget
	priority   int32
	// started is the latest start among the pods (how recent the option
	// is); earliest the earliest (how long its oldest pod has run).
	started, earliest time.Time
	whole             bool
}

// search finds a plan in one mode: members go one by one, largest first,
// to a node with room, else to the node where the fewest and least important
// victims make room; then every victim the plan can do without is given back.
func search(in Input, mode Mode) (Plan, bool, string) {
	s := newState(in, mode)
	if len(s.candidates) == 0 {
		return Plan{}, false, "no eligible victims"
	}
	failure := "the whole group does not fit even after evicting every eligible victim"
	if len(in.Deficits) > 0 {
		failure = "the whole group does not fit, or its queues stay over their capability, even after evicting every eligible victim"
	}
	// Single pods first (singletons, and gang members above minMember), so
	// that a plan of few pods beats one that takes a whole gang.
	for _, wholeGangs := range []bool{false, true} {
		s.reset()
		s.opts = s.options(wholeGangs)
		s.index(s.opts)
		if !s.greedy() || !s.cover() {
			continue
		}
		node := s.in.Nodes[s.placement[0]].Name
		if _, ok := s.place(); ok {
			s.reprieve()
			node, _ = s.place()
		}
		if len(s.taken) == 0 {
			// The group fits without evictions: nothing for us to do; the
			// scheduler's next attempt places it.
			return Plan{}, false, "the group fits without evictions"
		}
		placement := make([]string, len(s.placement))
		for m, i := range s.placement {
			placement[m] = s.in.Nodes[i].Name
		}
		return Plan{Mode: mode, Victims: s.victims(), Node: node, Placement: placement}, true, ""
	}
	return Plan{}, false, failure
}

// greedy places every member, taking victims where needed; false when a
// member finds no node.
func (s *state) greedy() bool {
	for _, m := range s.order {
		req := s.in.Preemptor.Members[m]
		at := -1
		for _, i := range s.eligibleNodes {
			if s.roomFor(i, req) {
				at = i
				break
			}
		}
		if at < 0 {
			var best []option
			for _, i := range s.eligibleNodes {
				if opts, ok := s.makeRoom(i, req); ok && (at < 0 || cheaper(opts, best)) {
					at, best = i, opts
				}
			}
			if at < 0 {
				return false
			}
			for _, o := range best {
				s.take(o)
			}
		}
		s.used[at].Add(req)
		s.placement[m] = at
	}
	return true
}

// roomFor: req fits node i's free room minus the members placed there.
func (s *state) roomFor(i int, req resources.List) bool {
	for k, v := range req {
		if v > 0 && v > s.free[i][k]-s.used[i][k] {
			return false
		}
	}
	return true
}

// makeRoom finds the options on node i whose eviction makes room for req:
// the node's options in preference order until req fits, then back to
// front, each one the room can do without is given back. Nothing stays
// taken; the caller takes the answer.
func (s *state) makeRoom(i int, req resources.List) ([]option, bool) {
	var got []option
	fit, n0 := false, len(s.steps)
	// Options that break no disruption budget go first; those that would
	// take a budget below zero (given what is taken by then) only when the
	// others do not make room. So of a budget that allows one disruption,
	// one pod goes before any other pod it covers is considered.
	for pass := 0; pass < 2 && !fit; pass++ {
		for _, o := range s.byNode[i] {
			if pass == 0 && s.violations(o.pods) > 0 {
				continue
			}
			if s.take(o) {
				got = append(got, s.steps[len(s.steps)-1])
				if fit = s.roomFor(i, req); fit {
					break
				}
			}
		}
	}
	if fit {
		for j := len(got) - 1; j >= 0; j-- {
			s.untake(got[j].pods)
			if s.roomFor(i, req) && s.gangsIntact() {
				got = slices.Delete(got, j, j+1)
				continue
			}
			s.retake(got[j].pods)
		}
	}
	for _, o := range got {
		s.untake(o.pods)
	}
	s.steps = s.steps[:n0]
	return got, fit
}

// state is the search's scratch: what is taken so far.
type state struct {
	in            Input
	mode          Mode
	candidates    []int            // eligible pods, by Input.Pods index
	nodeIndex     map[string]int   // eligible node name -> index in in.Nodes
	allNodes      map[string]int   // every node name -> index in in.Nodes
	eligibleNodes []int            // indexes of eligible nodes, in Input order
	free          []resources.List // per node: Free + freed by taken pods
	taken         map[int]bool     // pod index -> taken
	spent         []int32          // per budget: disruptions the taken pods spend
	takenQ        map[string]resources.List
	takenG        map[string]int32 // gang key -> its members taken
	groupPods     map[string][]int // gang key -> its candidate pods
	running       map[string]int32 // gang key -> running members (all, not only candidates)
	spare         map[string]int32 // gang key -> members it may lose one by one
	steps         []option         // taken options, in order
	opts          []option         // this round's options, best first
	byNode        map[int][]option // eligible node -> options with a pod there, best first
	used          []resources.List // per node: what placed members use
	placement     []int            // member -> node index (scratch)
	order         []int            // members by size, largest first
}

func newState(in Input, mode Mode) *state {
	s := &state{in: in, mode: mode, nodeIndex: map[string]int{}, groupPods: map[string][]int{}, running: map[string]int32{}}
	s.allNodes = make(map[string]int, len(in.Nodes))
	for i, n := range in.Nodes {
		if _, dup := s.allNodes[n.Name]; !dup {
			s.allNodes[n.Name] = i
		}
		if _, dup := s.nodeIndex[n.Name]; n.Eligible && !dup {
			s.nodeIndex[n.Name] = i
			s.eligibleNodes = append(s.eligibleNodes, i)
		}
	}
	for i, p := range in.Pods {
		if p.Group != "" {
			s.running[p.Group]++
		}
		if _, known := s.allNodes[p.Node]; known && s.eligible(p) {
			s.candidates = append(s.candidates, i)
			if p.Group != "" {
				s.groupPods[p.Group] = append(s.groupPods[p.Group], i)
			}
		}
	}
	s.spare = map[string]int32{}
	for g, n := range s.running {
		min := in.Groups[g].MinMember
		if min <= 1 {
			s.spare[g] = n // a group of one: every pod may go
		} else {
			s.spare[g] = max(n-min, 0)
		}
	}
	s.order = make([]int, len(in.Preemptor.Members))
	for i := range s.order {
		s.order[i] = i
	}
	// First-fit decreasing: big members first (cpu, then memory, then the
	// rest by name); ties keep the first member first.
	slices.SortStableFunc(s.order, func(a, b int) int {
		return compareRequests(in.Preemptor.Members[b], in.Preemptor.Members[a])
	})
	s.placement = make([]int, len(in.Preemptor.Members))
	return s
}

// eligible applies the mode's victim rules that do not depend on what else
// is taken.
func (s *state) eligible(p Pod) bool {
	pre := s.in.Preemptor
	if p.Queue == "" || (pre.Group != "" && p.Group == pre.Group) {
		return false
	}
	if _, ok := s.nodeIndex[p.Node]; !ok && !s.gangMember(p) && !s.inDeficit(p) {
		return false
	}
	if d := s.in.Options.MinRuntime; d > 0 && s.in.Options.Now.Sub(p.Started) < d {
		return false
	}
	switch s.mode {
	case Reclaim:
		q, ok := s.in.Queues[p.Queue]
		return ok && p.Queue != pre.Queue && q.Reclaimable
	case Preempt:
		return p.Queue == pre.Queue && p.Priority < pre.Priority
	}
	return false
}

// gangMember: a pod of a gang may be taken on a node the preemptor cannot
// use, as part of taking its whole gang.
func (s *state) gangMember(p Pod) bool {
	return p.Group != "" && s.in.Groups[p.Group].MinMember > 1
}

func (s *state) reset() {
	s.free = make([]resources.List, len(s.in.Nodes))
	for i, n := range s.in.Nodes {
		s.free[i] = n.Free.Clone()
	}
	s.used = make([]resources.List, len(s.in.Nodes))
	for i := range s.used {
		s.used[i] = resources.List{}
	}
	s.taken = map[int]bool{}
	s.spent = make([]int32, len(s.in.Budgets))
	s.takenQ = map[string]resources.List{}
	s.takenG = map[string]int32{}
	s.steps = s.steps[:0]
}

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
		p := s.in.Pods[i]
		if _, ok := s.nodeIndex[p.Node]; !ok && !s.inDeficit(p) {
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
	slices.SortStableFunc(out, func(a, b option) int {
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
	})
	return out
}

// index files the options under the eligible nodes they free room on.
func (s *state) index(opts []option) {
	s.byNode = map[int][]option{}
	for _, o := range opts {
		seen := map[int]bool{}
		for _, p := range o.pods {
			if i, ok := s.nodeIndex[s.in.Pods[p].Node]; ok && !seen[i] {
				seen[i] = true
				s.byNode[i] = append(s.byNode[i], o)
			}
		}
	}
}

// comparePods orders candidate pods: lower priority, most recently started, ID.
func (s *state) comparePods(a, b int) int {
	pa, pb := s.in.Pods[a], s.in.Pods[b]
	if c := cmp.Compare(pa.Priority, pb.Priority); c != 0 {
		return c
	}
	if c := pb.Started.Compare(pa.Started); c != 0 {
		return c
	}
	return strings.Compare(pa.ID, pb.ID)
}

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
		if g := s.in.Pods[add[0]].Group; g != "" && s.takenG[g] >= s.spare[g] {
			return false
		}
	}
	if !s.affordable(add) {
		return false
	}
	st := o
	st.pods = add
	st.disruptive = s.violations(add)
	for _, i := range add {
		p := s.in.Pods[i]
		if p.Group != "" {
			s.takenG[p.Group]++
		}
		s.taken[i] = true
		s.spend(p, 1)
		s.free[s.nodeIndexOf(p.Node)].Add(p.Request)
		s.takenQ[p.Queue] = s.takenQ[p.Queue].Add(p.Request)
	}
	s.steps = append(s.steps, st)
	return true
}

// nodeIndexOf returns the index of a node in Input.Nodes, eligible or not;
// room freed on an ineligible node is tracked but never used.
func (s *state) nodeIndexOf(name string) int { return s.allNodes[name] }

// place puts the members first-fit-decreasing and returns the first
// member's node.
func (s *state) place() (string, bool) {
	room := make([]resources.List, len(s.free))
	for i, f := range s.free {
		room[i] = f.Clone()
	}
	for _, m := range s.order {
		req := s.in.Preemptor.Members[m]
		placed := -1
		for _, i := range s.eligibleNodes {
			if req.FitsIn(room[i]) {
				placed = i
				break
			}
		}
		if placed < 0 {
			return "", false
		}
		room[placed].Sub(req)
		s.placement[m] = placed
	}
	return s.in.Nodes[s.placement[0]].Name, true
}

// reprieve gives back, most important first, every taken step the plan can
// do without; a gang member given back may not leave its gang short.
func (s *state) reprieve() {
	steps := slices.Clone(s.steps)
	slices.Reverse(steps) // the greedy took the least important first
	for _, st := range steps {
		s.untake(st.pods)
		if _, ok := s.place(); !ok || !s.gangsIntact() || !s.covered() {
			s.retake(st.pods)
		}
	}
}

// gangsIntact: every gang is either untouched, taken whole, or keeps at
// least minMember running members.
func (s *state) gangsIntact() bool {
	lost := map[string]int32{}
	for i := range s.taken {
		if g := s.in.Pods[i].Group; g != "" {
			lost[g]++
		}
	}
	for g, n := range lost {
		if n < s.running[g] && n > s.spare[g] {
			return false
		}
	}
	return true
}

func (s *state) untake(pods []int) {
	for _, i := range pods {
		p := s.in.Pods[i]
		delete(s.taken, i)
		if p.Group != "" {
			s.takenG[p.Group]--
		}
		s.spend(p, -1)
		s.free[s.nodeIndexOf(p.Node)].Sub(p.Request)
		s.takenQ[p.Queue].Sub(p.Request)
	}
}

func (s *state) retake(pods []int) {
	for _, i := range pods {
		p := s.in.Pods[i]
		s.taken[i] = true
		if p.Group != "" {
			s.takenG[p.Group]++
		}
		s.spend(p, 1)
		s.free[s.nodeIndexOf(p.Node)].Add(p.Request)
		s.takenQ[p.Queue].Add(p.Request)
	}
}

// victims lists the taken pods, most important first: higher priority, then
// longest running, then ID.
func (s *state) victims() []int {
	out := make([]int, 0, len(s.taken))
	for i := range s.taken {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b int) int { return s.comparePods(b, a) })
	return out
}
