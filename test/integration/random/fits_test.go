package random_test

import (
	"fmt"
	"sort"
)

// Feasibility as a correct scheduler would compute it, for the liveness
// checks. Every function here errs on the side of "not feasible": a check
// fires only when the harness has a concrete placement (and eviction plan)
// in hand that obeys every rule, so a scheduler that does not find one is
// wrong, whatever else it may know.

// withinQueue says whether the queue and each of its ancestors can take add
// more millicores within its real capability (capability, less the siblings'
// guarantees: pkg/queue.Divide's RealCapability, the lower of the two demand
// estimates).
func withinQueue(s *snapshot, views map[string]queueView, q string, add int64) bool {
	for _, a := range s.ancestors(q) {
		v, ok := views[a]
		if !ok {
			return false // a broken or unknown queue admits nothing
		}
		if v.Holding+add > v.RealCapLo {
			return false
		}
	}
	return true
}

// fitsFree says whether the group's next `need` members fit the free room
// now: per-node first fit of identical members onto the nodes its selector
// allows, within its queue's (and its ancestors') real capability.
func fitsFree(s *snapshot, views map[string]queueView, g *groupState) bool {
	need, ok := g.eligible()
	if !ok {
		return false
	}
	cpu := g.memberCPU()
	if !withinQueue(s, views, g.Queue, int64(need)*cpu) {
		return false
	}
	// Admission's fairness check (CheckFairness): only a group
	// that stays within its deserved share (the lower estimate), with its
	// ancestors', is entitled to the room. A group above its share may be
	// lent idle room; lendable (lend_test.go) says when it must be.
	for _, a := range s.ancestors(g.Queue) {
		if v := views[a]; v.Holding+int64(need)*cpu > v.DeservedLo {
			return false
		}
	}
	return fitsNodes(s, g, need, cpu)
}

// victim is a pod an eviction plan may take, with the budget it draws on.
type victim struct {
	pod    *podState
	budget string // the key of the budget (a queue, for reclaim) it counts against
}

// evictionPlan looks for a plan that places g's next members by evicting
// only candidates, and returns a description of it ("" when none is found).
// Candidates are singletons and surplus members of started gangs (alive
// beyond minMember), so no victim gang is left below minMember; budgets caps
// what may be taken per budget key. Members are placed one by one: on free
// room first, else on the node whose candidates free enough room with the
// fewest millicores taken.
func evictionPlan(s *snapshot, g *groupState, candidates func(*podState) (string, bool), budgets map[string]int64) string {
	need, ok := g.eligible()
	if !ok {
		return ""
	}
	cpu := g.memberCPU()
	surplus := map[string]int{}
	for _, o := range s.Groups {
		if o.Gang {
			surplus[o.Name] = o.count((*podState).holding) - o.MinMember
		}
	}
	free := map[string]int64{}
	byNode := map[string][]victim{}
	for _, n := range s.Nodes {
		free[n.Name] = n.Alloc - n.Used
	}
	for _, p := range s.Pods {
		if !p.holding() {
			continue
		}
		key, ok := candidates(p)
		if !ok {
			continue
		}
		if o := s.Groups[p.Group]; o == nil || (o.Gang && surplus[o.Name] <= 0) {
			continue
		}
		byNode[p.Node] = append(byNode[p.Node], victim{pod: p, budget: key})
	}
	for _, vs := range byNode {
		sort.Slice(vs, func(i, j int) bool { return vs[i].pod.CPU < vs[j].pod.CPU })
	}
	taken := map[string]bool{}
	var plan []string
	for range need {
		placed := false
		for _, n := range s.Nodes {
			if matches(g.selector(), n) && free[n.Name] >= cpu {
				free[n.Name] -= cpu
				placed = true
				break
			}
		}
		if placed {
			continue
		}
		for _, n := range s.Nodes {
			if !matches(g.selector(), n) {
				continue
			}
			room := free[n.Name]
			var chosen []victim
			spent := map[string]int64{}
			drawn := map[string]int{}
			for _, v := range byNode[n.Name] {
				if room >= cpu {
					break
				}
				o := s.Groups[v.pod.Group]
				if taken[v.pod.Name] || budgets[v.budget]-spent[v.budget] < v.pod.CPU ||
					(o.Gang && surplus[o.Name]-drawn[o.Name] <= 0) {
					continue
				}
				chosen = append(chosen, v)
				spent[v.budget] += v.pod.CPU
				drawn[o.Name]++
				room += v.pod.CPU
			}
			if room < cpu {
				continue
			}
			for _, v := range chosen {
				taken[v.pod.Name] = true
				budgets[v.budget] -= v.pod.CPU
				surplus[v.pod.Group]--
				plan = append(plan, fmt.Sprintf("%s(%s,%dm)@%s", v.pod.Name, v.pod.Queue, v.pod.CPU, n.Name))
			}
			free[n.Name] = room - cpu
			placed = true
			break
		}
		if !placed {
			return ""
		}
	}
	if len(plan) == 0 {
		return "" // it fits the free room: fitsFree's case
	}
	return fmt.Sprintf("evict %v", plan)
}

// preemptionPlan: evict lower-priority work of g's own queue. The queue's
// capability still bounds g (the victims' room is reused within the queue).
func preemptionPlan(s *snapshot, views map[string]queueView, g *groupState) string {
	need, ok := g.eligible()
	if !ok {
		return ""
	}
	// The victims leave the queue, so only g's net addition must fit; the
	// conservative reading charges g in full.
	add := int64(need) * g.memberCPU()
	if !withinQueue(s, views, g.Queue, add) {
		return ""
	}
	// Admission's fairness check counts what preemption frees in the
	// queue (docs/queues.md): the queue, and each ancestor, must stay
	// within its deserved share once the queue's lower priorities are
	// gone, unless those cover the group (a swap: the queue does not
	// grow). As for fitsFree, a queue that would grow past its share
	// admits nothing while others' demand claims the rest.
	var lower int64
	for _, p := range s.Pods {
		if p.alive() && !p.Terminating && p.Queue == g.Queue && p.Priority < g.Priority {
			lower += p.CPU
		}
	}
	if lower < add {
		for _, a := range s.ancestors(g.Queue) {
			if v := views[a]; v.Holding-lower+add > v.DeservedLo {
				return ""
			}
		}
	}
	budgets := map[string]int64{"preempt": 1 << 62}
	return evictionPlan(s, g, func(p *podState) (string, bool) {
		return "preempt", p.Queue == g.Queue && p.Priority < g.Priority
	}, budgets)
}

// reclaimPlan: evict the excess of other queues above their deserved share.
// g's queue, and each of its ancestors, must stay within its deserved share
// (lower estimate) once g runs; a victim queue, and each of its ancestors,
// must keep at least its deserved share (higher estimate) and its guarantee,
// and must be reclaimable.
func reclaimPlan(s *snapshot, views map[string]queueView, g *groupState) string {
	need, ok := g.eligible()
	if !ok {
		return ""
	}
	add := int64(need) * g.memberCPU()
	if !withinQueue(s, views, g.Queue, add) {
		return ""
	}
	mine := map[string]bool{}
	for _, a := range s.ancestors(g.Queue) {
		mine[a] = true
		if v := views[a]; v.Holding+add > v.DeservedLo {
			return ""
		}
	}
	budgets := map[string]int64{}
	for name := range views {
		if mine[name] {
			continue
		}
		b := int64(1 << 62)
		for _, a := range s.ancestors(name) {
			v := views[a]
			if mine[a] || !views[name].Reclaimable {
				b = 0
				break
			}
			excess := v.Holding - max(v.DeservedHi, v.Guarantee)
			if a != name {
				// A parent's excess is shared by its children: each may
				// draw only its part, so that together they cannot take
				// the parent below its share.
				excess /= int64(max(1, s.children(a)))
			}
			b = min(b, excess)
		}
		if b > 0 {
			budgets[name] = b
		}
	}
	return evictionPlan(s, g, func(p *podState) (string, bool) {
		_, ok := budgets[p.Queue]
		return p.Queue, ok
	}, budgets)
}
