// Package gangbook keeps the record of each gang: its PodGroup's spec, its
// members and their counts, its backoff and why it last could not be
// placed. The cache owns the records and feeds them from pod and group
// events under its lock; admission and the plugins read them. It knows no
// client, informer or queue.
package gangbook

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/status"
)

// ProfileLocked is the scheduler name of one of g's members ("" with none):
// the profile whose recorder reports Events about the PodGroup. A gang's
// members name one profile; if they do not, one of them is as good as any.
func (g *Group) ProfileLocked() string {
	for _, m := range g.Members {
		return m.Pod.Spec.SchedulerName
	}
	return ""
}

// Group is one PodGroup (or a set of pods naming a PodGroup not yet seen).
type Group struct {
	Key GroupKey
	// Obj is the spec its adapter read from the group's PodGroup (of
	// whatever dialect); nil when no such object exists.
	Obj     *groupspec.Spec
	Spec    gang.Spec
	Created time.Time
	Members map[types.UID]*Member
	Counts  gang.Counts
	// PendingReq is what the members that wait to be placed ask for
	// (reachable, neither reserved nor bound): kept by Count with
	// Counts, O(1) per member event; a started gang's demand beyond its
	// minimum, which admission sums per queue.
	PendingReq resources.List
	// Priority is the highest member priority, so that all members sort
	// together; priorityCount is how many members have it.
	Priority      int32
	priorityCount int
	// Enqueueable caches gang.Enqueueable's answer, so that members are
	// activated once, when it flips to true, instead of on every member event.
	Enqueueable bool
	// OverdueWhy, when set, says why the promise of a gang created
	// members-after-admission is withdrawn: its members did not reach
	// Caldera in time (the cache's overdue watch). Admission then counts only the members
	// that exist.
	OverdueWhy string
	// taskPlaced counts, per task, the members placed (unfinished) or
	// succeeded, kept by Count, for the per-task minimums
	// (gang.TasksReady); nil while no member has a task.
	taskPlaced map[string]int
	// MinRequest is gang.MinRequest's answer, recomputed lazily after membership changes.
	MinRequest      resources.List
	MinRequestValid bool

	FirstAttempt time.Time
	Backoff      gang.BackoffState
	BackoffTimer *time.Timer
	// Unschedulable is the last reason the gang could not be placed; cleared
	// when it is placed.
	Unschedulable string
	// LastEvent is the reason and message of the last Event written, so that
	// one state produces one Event.
	LastEvent string
	// toldWaiting: the last status work told the members' conditions that
	// the gang waits for members or its PodGroup (waitingWorkLocked).
	toldWaiting bool
	// Finishing holds the bound members that left the scheduler's informer
	// without the finished-member informer having delivered them, each until
	// its deadline: they may be finishing, and while one may, the group's
	// status and Events wait (unfinishedPodDeleteLocked). Nil when empty.
	Finishing map[types.UID]time.Time
}

// HoldsStatusLocked reports whether a member of g may still be finishing at
// now, and forgets those whose deadline has passed.
func (g *Group) HoldsStatusLocked(now time.Time) bool {
	for uid, until := range g.Finishing {
		if !now.Before(until) {
			delete(g.Finishing, uid)
		}
	}
	if len(g.Finishing) == 0 {
		g.Finishing = nil
		return false
	}
	return true
}

// PendingPodsLocked maps the members that wait for a node by namespace/name.
func (g *Group) PendingPodsLocked() map[string]*v1.Pod {
	out := make(map[string]*v1.Pod, g.Counts.Pending)
	for _, m := range g.Members {
		if m.waiting() {
			out[m.Pod.Namespace+"/"+m.Pod.Name] = m.Pod
		}
	}
	return out
}

// WaitingPodsLocked lists the members that wait for a node, for the status
// writer's conditions.
func (g *Group) WaitingPodsLocked() []*v1.Pod {
	var out []*v1.Pod
	for _, m := range g.Members {
		if m.waiting() {
			out = append(out, m.Pod)
		}
	}
	return out
}

// MinRequestLocked is what g needs before it can run (gang.MinRequest over
// its reachable members), cached in g until its members or spec change.
// The caller holds the cache's lock (for writing: it may fill the cache).
func (g *Group) MinRequestLocked() resources.List {
	if !g.MinRequestValid {
		reqs := make([]resources.List, 0, g.Counts.Active)
		for _, m := range g.Members {
			if m.State.Reachable() {
				reqs = append(reqs, m.Request)
			}
		}
		g.MinRequest = gang.MinRequest(g.Spec, reqs)
		g.MinRequestValid = true
	}
	return g.MinRequest
}

// BarrierOpen reports whether g may bind what it has placed: its minimum
// (gang.ReadyCounts) and each task's (gang.TasksReady); else what it waits
// for. O(tasks).
func (g *Group) BarrierOpen() (bool, string) {
	if !gang.ReadyCounts(g.Spec, g.Counts) {
		return false, fmt.Sprintf("waiting for the gang: %d/%d members placed", g.Counts.Placed, g.Spec.MinMember)
	}
	if ok, task := gang.TasksReady(g.Spec, g.taskPlaced); !ok {
		return false, fmt.Sprintf("waiting for the gang: task %s has %d/%d members placed", task, g.taskPlaced[task], g.Spec.MinTaskMember[task])
	}
	return true, ""
}

// NeededByTask reports whether m, of a task short of its minimum, is part
// of the gang's minimum however many others are placed: with a master
// still to place, four workers placed are not the minimum of a job of
// master 1 and workers 3, and the master is no extra. O(tasks).
func (g *Group) NeededByTask(m *Member) bool {
	if m == nil || m.Task == "" {
		return false
	}
	need, ok := g.Spec.MinTaskMember[m.Task]
	if !ok {
		return false
	}
	if ready, _ := gang.TasksReady(g.Spec, g.taskPlaced); ready {
		return false
	}
	have := g.taskPlaced[m.Task]
	if m.State.Placed() && !m.State.Phase.Terminal() {
		have--
	}
	return have < int(need)
}

// MembersAfterAdmission reports whether g's controller creates its members
// only once it is admitted (groupspec.Rules).
func (g *Group) MembersAfterAdmission() bool {
	return g.Obj != nil && g.Obj.Rules.MembersAfterAdmission
}

// WaitingWorkLocked adds to w the pods whose condition is to say that the
// gang waits for members or for its PodGroup (w.Notice says whether it
// does), or, once it no longer does, the pods to take that out of. The
// message carries no counts, so a Job creating its pods one by one does
// not rewrite every pod's condition per arrival; the writer skips pods that
// already say it. O(members) for a group that waits or just stopped.
func (g *Group) WaitingWorkLocked(w *status.Group) {
	switch {
	case w.Notice.Reason == gang.ReasonWaiting && g.Obj == nil:
		w.WaitingReason, w.WaitingMessage = status.ReasonWaitingForPodGroup, w.Notice.Message
	case w.Notice.Reason == gang.ReasonWaiting:
		w.WaitingReason = status.ReasonWaitingForMembers
		w.WaitingMessage = fmt.Sprintf("waiting for PodGroup %s to have minMember %d members", g.Key, g.Spec.MinMember)
	case !g.toldWaiting:
		return
	}
	g.toldWaiting = w.WaitingReason != ""
	w.Waiting = g.WaitingPodsLocked()
}

// AddPriority and removePriority keep the group's priority at its members'
// maximum; only removing the last member at the maximum costs a scan.
func (g *Group) AddPriority(p int32) {
	switch {
	case g.priorityCount == 0 || p > g.Priority:
		g.Priority, g.priorityCount = p, 1
	case p == g.Priority:
		g.priorityCount++
	}
}

func (g *Group) RemovePriority(p int32) {
	if p != g.Priority {
		return
	}
	if g.priorityCount--; g.priorityCount > 0 {
		return
	}
	g.Priority = 0
	for _, o := range g.Members {
		g.AddPriority(PodPriority(o.Pod))
	}
}

// Count adds member m's state to g's counts, per-task placements and what
// its waiting members ask for (delta +1), or takes it out (delta -1), and
// reports whether the waiting members' request changed.
func (g *Group) Count(m *Member, delta int) bool {
	g.Counts.Add(m.State, delta)
	if m.Task != "" && (m.State.Placed() && !m.State.Phase.Terminal() || m.State.Phase == gang.PodSucceeded) {
		if g.taskPlaced == nil {
			g.taskPlaced = map[string]int{}
		}
		g.taskPlaced[m.Task] += delta
	}
	if !Waiting(m) {
		return false
	}
	if delta > 0 {
		g.PendingReq = g.PendingReq.Add(m.Request)
	} else {
		g.PendingReq = g.PendingReq.Sub(m.Request)
	}
	return true
}
