package admission

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// Some controllers create a gang's members only once the gang is admitted
// (Volcano's job controller waits for Inqueue): their adapters say so with
// groupspec.Rules.MembersAfterAdmission. Such a gang is admitted before
// any member exists, counting its minMember (promisedMembers) and judged
// by its sums; admitted, it holds its minimum until its pods arrive
// (awaitsMembers); and a job restarted by recreating its PodGroup leaves
// terminating pods of the earlier object that are not members (leftover).

// promisedMembers is the member count admission sees for g: the members
// Caldera can place, or, for a gang whose controller creates them only once
// it is admitted, at least its minMember.
func promisedMembers(g *gangbook.Group) int32 {
	n := int32(g.Counts.Reachable())
	if g.MembersAfterAdmission() && g.OverdueWhy == "" && n < g.Spec.MinMember {
		return g.Spec.MinMember
	}
	return n
}

// awaitsMembers reports whether g is a gang created members-after-admission
// none of whose members exist yet: admitted, it reserves its minimum for
// the pods its controller is about to create. One that started (its object
// says so, as after a restart) and has no member left is done and reserves
// nothing.
func awaitsMembers(g *gangbook.Group) bool {
	return g.Counts.Members == 0 && awaitsCreation(g)
}

// Leftover reports whether pod, terminating, is left over from an earlier
// PodGroup of g's name, for a gang created members-after-admission:
// created before g's object, it belonged to the one its controller deleted
// and made again to restart the job (Volcano's policy RestartJob). Such a pod is not a member of the new gang, which
// would otherwise count as Running, and started, on pods about to go; its
// node room stays counted as any pod's is until it is gone. Creation times
// are whole seconds, so a pod created in the same second as the new object
// stays a member.
func Leftover(g *gangbook.Group, pod *v1.Pod) bool {
	return pod.DeletionTimestamp != nil && g != nil && g.MembersAfterAdmission() &&
		pod.CreationTimestamp.Time.Before(g.Obj.Source.Created)
}

// noConstraints is the pod a member not yet created is placed as.
var noConstraints = &v1.Pod{}

// missingClass is the placement class of n members of g that do not exist
// yet. Members created before admission cannot be placed until they exist.
// Those of a gang created members-after-admission each ask for an even
// share of minResources (rounded up), on any node without a taint: all
// that is known of pods not yet created.
func (pp *passPlacement) missingClass(g *gangbook.Group, n int) placement.Class {
	if !g.MembersAfterAdmission() {
		return placement.Class{Request: make([]int64, pp.Free.R), Count: n, Nodes: []int32{}}
	}
	per := resources.List{}
	if m := int64(g.Spec.MinMember); m > 0 {
		for k, v := range g.Spec.MinResources {
			per[k] = (v + m - 1) / m
		}
	}
	return pp.ClassOf(noConstraints, per, n)
}

// plannedClasses are the members of key's gang as a reservation plans them
// when none exists yet (awaitsMembers): admission judges such a gang by its
// sums, but a reservation is a placement. When its PodGroup names at most
// one task its members are alike, minResources / minMember each, that may
// use any node (no pod tells their selectors or tolerations yet); with more
// tasks nothing tells how minResources splits, and it gets no reservation.
// The classes are the pass's scratch, not unitClasses' memo: admission
// keeps judging the gang by its sums.
func (pp *passPlacement) plannedClasses(key queue.Key) ([]placement.Class, int) {
	u := pp.adm.Units[key]
	if u == nil || u.Gang == nil {
		return nil, 0
	}
	g := u.Gang
	if !awaitsMembers(g) || len(g.Spec.MinTaskMember) > 1 || len(g.Spec.MinResources) == 0 || g.Spec.MinMember < 1 {
		return nil, 0
	}
	pp.classKey = queue.Key{}
	pp.classes = append(pp.classes[:0], pp.missingClass(g, int(g.Spec.MinMember)))
	return pp.classes, int(g.Spec.MinMember)
}

// checkPodless is Check for a unit with no member to place: a gang none of
// whose members exist yet is judged by its sums, and placed nowhere. Only
// the reservations are checked, on its planned members (plannedClasses):
// it may not start now in room a reservation needs unless its limit ends
// first. Judged by sums alone, a Volcano job without a limit was admitted
// into a reservation's room, and its pods then found every node of that
// room held by the reservation.
func (pp *passPlacement) checkPodless(g queue.Group, plan queue.Plan, vetoed bool) (fit, want int) {
	pp.lastSteps = pp.lastSteps[:0]
	pp.lastOK = true
	if !pp.Tp.built {
		return 0, 0
	}
	classes, n := pp.plannedClasses(g.Key)
	if n == 0 {
		return 0, 0
	}
	if vetoed || plan == queue.PlanNone && !pp.backfills(g, classes) {
		pp.lastOK = false
		return 0, n
	}
	return 0, 0
}

// awaitsCreation reports whether g's controller creates its members only
// once it is admitted and may not have created them all: while it has not
// started, the members it lacks hold room as planned members (missingClass)
// in the working copy. Counted only in its queue's sums, that room looked
// free on every node until the last pod came (Volcano's controller creates
// them one by one): a pass in between reserved it for a younger job, whose
// reservation then kept the gang's own pods off it.
func awaitsCreation(g *gangbook.Group) bool {
	return g.MembersAfterAdmission() && !g.Obj.Started
}

// commitAwaited is Commit for a gang admitted before any member exists:
// its planned members take room in the working copy, where the backfill
// check put them, else on the reservation it started on, else first-fit;
// and are pinned there for the passes until its pods arrive.
func (pp *passPlacement) commitAwaited(g queue.Group) {
	u := pp.adm.Units[g.Key]
	if u == nil || u.Gang == nil || !awaitsMembers(u.Gang) {
		pp.pin(g.Key, nil, nil) // nothing to place: no pins of an earlier admission
		return
	}
	var classes []placement.Class
	var steps []placement.Step
	switch {
	case pp.Tp.jobKey == g.Key:
		classes, steps = pp.Tp.job.Classes, pp.Tp.jobSteps
	default:
		pp.classKey = queue.Key{}
		pp.classes = append(pp.classes[:0], pp.missingClass(u.Gang, int(u.Gang.Spec.MinMember)))
		classes, steps = pp.classes, pp.startingSteps(g.Key)
	}
	if steps == nil {
		_, steps = pp.placer.Place(&pp.Free, classes)
	} else {
		placement.Apply(&pp.Free, classes, steps)
	}
	pp.pin(g.Key, classes, steps)
}

// startingSteps is the placement of key's reservation of this pass when it
// starts now, by this pass's node indexes; nil without one.
func (pp *passPlacement) startingSteps(key queue.Key) []placement.Step {
	if !pp.startsOnReservation(key) {
		return nil
	}
	i := slices.IndexFunc(pp.Tp.held, func(t Timed) bool { return t.Key == key })
	steps := pp.keptPlacement(pp.Tp.held[i])
	if len(steps) == 0 {
		return nil
	}
	return steps
}
