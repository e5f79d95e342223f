package admission

import v1 "k8s.io/api/core/v1"

// QueueCounts are a queue's units by state, as its status shows them
// (QueueStatus pending, admitted, running, completed).
type QueueCounts struct {
	Pending, Admitted, Running, Completed int32
}

// unitState is the count of QueueCounts a unit is in.
type unitState uint8

const (
	// stateNone: not counted (a unit not yet counted, or dropped).
	stateNone unitState = iota
	statePending
	stateAdmitted
	stateRunning
	stateCompleted
)

// stateOf is the count u belongs in now: pending until admitted; then
// completed once a gang's minimum succeeded and nothing runs, running
// while a member (or the singleton's pod) runs, else admitted. O(1).
func stateOf(u *Unit) unitState {
	switch {
	case !u.Admitted:
		return statePending
	case u.Gang != nil && u.Gang.Counts.Succeeded >= int(u.Min) && u.Gang.Counts.Running == 0:
		return stateCompleted
	case u.Gang != nil && u.Gang.Counts.Running > 0:
		return stateRunning
	case u.Gang == nil && u.Pod.Status.Phase == v1.PodRunning:
		return stateRunning
	}
	return stateAdmitted
}

// add adds n to the count of state s.
func (c *QueueCounts) add(s unitState, n int32) {
	switch s {
	case statePending:
		c.Pending += n
	case stateAdmitted:
		c.Admitted += n
	case stateRunning:
		c.Running += n
	case stateCompleted:
		c.Completed += n
	}
}

// countLocked moves u to the count of its state now, in its queue. O(1).
// Every change that can move a unit between counts ends in
// setInflightLocked, which calls it: a unit's admission and release; a
// gang's member counts, through SyncGangUnitLocked; a bound pod's every
// event, phase included, through its account's hold. So the queues'
// status reads the counts instead of walking every unit each period,
// under the cache's lock: 1.0-1.3 ms a look at 20,000 bound pods
// (BenchmarkQueueStatusUpdates; 40 us with the counts), and linear in
// the units.
func (a *State) countLocked(u *Unit) {
	s := stateOf(u)
	if s == u.counted {
		return
	}
	a.uncountLocked(u)
	a.usageLocked(u.Queue).Counts.add(s, 1)
	u.counted = s
}

// uncountLocked takes u out of its queue's counts: it is dropped, or is
// about to move to another queue. O(1).
func (a *State) uncountLocked(u *Unit) {
	if u.counted == stateNone {
		return
	}
	a.usageLocked(u.Queue).Counts.add(u.counted, -1)
	u.counted = stateNone
}

// QueueCountsLocked returns queue q's units by state. O(1).
func (a *State) QueueCountsLocked(q string) QueueCounts {
	if u := a.Usage[q]; u != nil {
		return u.Counts
	}
	return QueueCounts{}
}
