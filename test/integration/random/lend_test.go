package random_test

import "github.com/caldera-sched/caldera/pkg/queue"

// Lending idle room, as the model sees it (docs/queues.md, "Idle room is
// lent, and reclaimed"). The scheduler admits a group refused only by its
// deserved share onto the free room when its queue is reclaimable and no
// group within its share waits for room. Like the rest of the liveness
// model, lendable errs towards "not lendable": it names a group only when
// every rule is met by a margin a different estimate of demand cannot
// undo, so a group it names and the scheduler leaves pending is a defect.

// entitledWaiting says whether some pending group might be entitled to room
// in the scheduler's eyes: within its deserved share by the higher estimate
// of demand at every level, or alone larger than the lower estimate at some
// level (the head exception may waive the share for it). The scheduler
// lends nothing while such a group is refused for room.
func entitledWaiting(s *snapshot, views map[string]queueView) bool {
	for _, g := range s.Groups {
		need, ok := g.eligible()
		if !ok {
			continue
		}
		add := int64(need) * g.memberCPU()
		within, alone := true, false
		for _, a := range s.ancestors(g.Queue) {
			v, ok := views[a]
			if !ok {
				within = false
				break
			}
			if v.Holding+add > v.DeservedHi {
				within = false
			}
			if add > v.DeservedLo {
				alone = true
			}
		}
		if within || alone {
			return true
		}
	}
	return false
}

// lendable says whether g must be lent the free room now: nothing of it has
// started (a started gang's next members are extras, which are never lent),
// its queue is reclaimable and within its capability with g, its queue has
// no lower-priority pods (the preemption try would decide it instead) and
// at most queue.DefaultLookahead eligible groups (a pass looks no further),
// and its next members fit the free room, node by node.
func lendable(s *snapshot, views map[string]queueView, g *groupState) bool {
	need, ok := g.eligible()
	if !ok || g.count(func(p *podState) bool { return p.Node != "" }) > 0 {
		return false
	}
	if v, ok := views[g.Queue]; !ok || !v.Reclaimable {
		return false
	}
	cpu := g.memberCPU()
	if !withinQueue(s, views, g.Queue, int64(need)*cpu) {
		return false
	}
	queued := 0
	for _, o := range s.Groups {
		if _, ok := o.eligible(); ok && o.Queue == g.Queue {
			queued++
		}
	}
	if queued > queue.DefaultLookahead {
		return false
	}
	for _, p := range s.Pods {
		if p.alive() && p.Queue == g.Queue && p.Priority < g.Priority {
			return false
		}
	}
	return fitsNodes(s, g, need, cpu)
}

// fitsNodes says whether need members of cpu each fit the free room of the
// nodes g's selector allows.
func fitsNodes(s *snapshot, g *groupState, need int, cpu int64) bool {
	placed := 0
	for _, n := range s.Nodes {
		if matches(g.selector(), n) {
			placed += int((n.Alloc - n.Used) / max(cpu, 1))
		}
	}
	return placed >= need
}
