// Package gang holds Caldera's gang-scheduling policy as pure functions over
// plain values: how a member's state counts towards its group, when a group may
// enter the scheduling queue, when Permit lets a gang through, which phase a
// group is in, and how long a failed group backs off.
//
// It imports no Kubernetes client or scheduler framework code, so every rule is
// tested table by table without an API server. pkg/cache translates pods and
// PodGroups into these values; the plugins translate the answers into framework
// statuses.
package gang

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// PodPhase is the lifecycle phase of a member pod, mirroring v1.PodPhase.
type PodPhase uint8

// Member pod phases.
const (
	PodPending PodPhase = iota
	PodRunning
	PodSucceeded
	PodFailed
)

// Terminal reports whether a pod in this phase will never run again.
func (p PodPhase) Terminal() bool { return p == PodSucceeded || p == PodFailed }

// Member is what the cache knows about one member pod.
type Member struct {
	Phase PodPhase
	// Assigned: the pod has spec.nodeName, i.e. it is bound.
	Assigned bool
	// Reserved: this scheduler reserved a node for the pod (Reserve ran) and has
	// not yet seen it bound. A reserved pod holds resources in the scheduler's cache.
	Reserved bool
	// Waiting: the pod is parked in Permit, waiting for its siblings.
	Waiting bool
	// Unreachable: the pod is not bound and this scheduler cannot place it
	// (another schedulerName, or scheduling gates): it never reaches
	// Permit, so it must not count towards minMember until it is bound.
	Unreachable bool
}

// Reachable reports whether the member counts towards the gang's minimum
// before it is bound: not finished, and placed or placeable by us.
func (m Member) Reachable() bool {
	return !m.Phase.Terminal() && (m.Placed() || !m.Unreachable)
}

// Placed reports whether the member holds a node for the gang: reserved or bound,
// and not finished.
func (m Member) Placed() bool { return !m.Phase.Terminal() && (m.Assigned || m.Reserved) }

// Counts are a group's aggregates over its members. Each field is maintained
// incrementally by Add, so a pod event costs O(1) whatever the group's size.
type Counts struct {
	// Members counts every known member pod, finished ones included.
	Members int
	// Active counts members that are not finished (pending, placed or running).
	Active int
	// Pending counts active members that hold no node yet.
	Pending int
	// Unreachable counts pending members that this scheduler cannot place
	// (Member.Unreachable): Active - Unreachable may reach Permit.
	Unreachable int
	// Waiting counts members parked in Permit.
	Waiting int
	// Placed counts active members that are reserved or bound.
	Placed int
	// Bound counts members with a node assigned, in any phase.
	Bound int
	// Running, Succeeded and Failed count members by pod phase.
	Running, Succeeded, Failed int
}

// Add adds (delta=+1) or removes (delta=-1) one member in state m.
func (c *Counts) Add(m Member, delta int) {
	c.Members += delta
	if !m.Phase.Terminal() {
		c.Active += delta
		if m.Placed() {
			c.Placed += delta
		} else {
			c.Pending += delta
			if m.Unreachable {
				c.Unreachable += delta
			}
		}
	}
	if m.Waiting {
		c.Waiting += delta
	}
	if m.Assigned {
		c.Bound += delta
	}
	switch m.Phase {
	case PodRunning:
		c.Running += delta
	case PodSucceeded:
		c.Succeeded += delta
	case PodFailed:
		c.Failed += delta
	}
}

// Spec is the part of a PodGroup the policy reads.
type Spec struct {
	MinMember int32
	// MinResources is the PodGroup's spec.minResources; nil when unset.
	MinResources resources.List
	// ScheduleTimeoutSeconds is the PodGroup's value; nil when unset.
	ScheduleTimeoutSeconds *int32
	// MinTaskMember is, per task (a role among the members, such as a
	// master and its workers), how many of that task's members the gang
	// needs placed together; nil when the gang has no tasks.
	MinTaskMember map[string]int32
}

// Validate returns a user-facing reason when the spec cannot be scheduled as a
// gang. The CRD rejects minMember < 1, but a client that omits the field (Go's
// omitempty drops 0) still produces such an object.
func (s Spec) Validate() error {
	if s.MinMember < 1 {
		return fmt.Errorf("spec.minMember is %d, must be at least 1", s.MinMember)
	}
	return nil
}

// Enqueueable decides whether a member pod may enter the active queue. exists
// reports whether the PodGroup object is known; when it is, spec is its spec and
// c the group's counts. The message says what the pod waits for.
func Enqueueable(groupKey string, exists bool, spec Spec, c Counts) (bool, string) {
	if CanEnqueue(exists, spec, c) {
		return true, ""
	}
	if !exists {
		return false, "waiting for PodGroup " + groupKey
	}
	if err := spec.Validate(); err != nil {
		return false, "PodGroup " + groupKey + " is invalid: " + err.Error()
	}
	return false, waitingForMembers(spec, c)
}

// CanEnqueue is Enqueueable's answer without its message, which costs an
// allocation: the cache asks on every member event (a restart, once per
// bound member) and keeps only the answer.
func CanEnqueue(exists bool, spec Spec, c Counts) bool {
	return exists && spec.Validate() == nil && int32(c.Reachable()) >= spec.MinMember
}

// waitingForMembers says how many of minMember members may reach Permit,
// and how many more exist that cannot.
func waitingForMembers(spec Spec, c Counts) string {
	if c.Unreachable > 0 {
		return fmt.Sprintf("waiting for members: %d/%d (%d more exist but are gated or name another scheduler)", c.Reachable(), spec.MinMember, c.Unreachable)
	}
	return fmt.Sprintf("waiting for members: %d/%d", c.Reachable(), spec.MinMember)
}

// Reachable counts the members that count towards minMember: bound or
// reserved ones, and pending ones this scheduler can place. A gang whose
// other members are gated or belong to another scheduler would otherwise
// reserve nodes, time out and back off, round after round.
func (c Counts) Reachable() int { return c.Active - c.Unreachable }

// Ready reports whether a gang with placed members holding nodes may be let
// through Permit: the pod asking is already counted in placed (it passed Reserve).
func Ready(spec Spec, placed int) bool { return int32(placed) >= spec.MinMember }

// ReadyCounts reports whether a gang may bind what it has placed: minMember
// members placed, or, once fewer than minMember members are left unfinished,
// the placed ones with the succeeded ones making up minMember. The second
// case is the tail of an elastic gang whose first minMember completed: placed
// members alone can never reach minMember again, and the rest would wait in
// Permit, time out and back off forever; each of them goes as it is placed,
// as an extra of a gang that has started does (waiting for all of them would
// make a new barrier that the extras' share check, placing them one by one,
// can hold shut). Succeeded members count as Volcano's
// job readiness counts them (ReadyTaskNum); failed ones do not, so a gang
// whose members failed re-forms whole, and while minMember members are left
// a succeeded one holds no node for them.
func ReadyCounts(spec Spec, c Counts) bool {
	if Ready(spec, c.Placed) {
		return true
	}
	return c.Active < int(spec.MinMember) && Ready(spec, c.Placed+c.Succeeded)
}

// TasksReady reports whether each task of the gang has its minimum among
// the members placed or succeeded (placed, per task name), and names the
// first task, in name order, that does not. As Volcano's gang plugin does,
// a gang whose minMember is below the sum of its tasks' minimums (an
// elastic job that may start without every task whole) is not held by
// them. O(tasks).
func TasksReady(spec Spec, placed map[string]int) (ok bool, short string) {
	if len(spec.MinTaskMember) == 0 {
		return true, ""
	}
	var total int32
	names := make([]string, 0, len(spec.MinTaskMember))
	for name, n := range spec.MinTaskMember {
		total += n
		names = append(names, name)
	}
	if spec.MinMember < total {
		return true, ""
	}
	slices.Sort(names)
	for _, name := range names {
		if placed[name] < int(spec.MinTaskMember[name]) {
			return false, name
		}
	}
	return true, ""
}

// PermitTimeout is how long a member may wait in Permit: the PodGroup's
// scheduleTimeoutSeconds when positive, else the plugin default.
func PermitTimeout(spec Spec, def time.Duration) time.Duration {
	if spec.ScheduleTimeoutSeconds != nil && *spec.ScheduleTimeoutSeconds > 0 {
		return time.Duration(*spec.ScheduleTimeoutSeconds) * time.Second
	}
	return def
}

// Phase names the lifecycle phases of a group, with scheduler-plugins' vocabulary.
type Phase string

// Group phases.
const (
	PhasePending    Phase = "Pending"
	PhaseScheduling Phase = "Scheduling"
	PhaseRunning    Phase = "Running"
	PhaseFinished   Phase = "Finished"
	PhaseFailed     Phase = "Failed"
)

// PhaseOf derives a group's phase from its counts:
//   - Finished: at least minMember succeeded and none running;
//   - Failed: some failed and the members left cannot reach minMember;
//   - Running: at least minMember running or already succeeded, some still running;
//   - Scheduling: at least minMember bound;
//   - Pending: otherwise.
func PhaseOf(spec Spec, c Counts) Phase {
	min := int(spec.MinMember)
	switch {
	case c.Succeeded >= min && c.Running == 0:
		return PhaseFinished
	case c.Failed > 0 && c.Members-c.Failed < min:
		return PhaseFailed
	case c.Running > 0 && c.Running+c.Succeeded >= min:
		return PhaseRunning
	case c.Bound >= min:
		return PhaseScheduling
	default:
		return PhasePending
	}
}

// Backoff is the policy for groups that failed to schedule as a whole: the first
// failure waits Base, each consecutive one doubles it, up to Max.
type Backoff struct {
	Base, Max time.Duration
}

// BackoffState is one group's position in its backoff.
type BackoffState struct {
	// Failures counts consecutive failures since the group last got placed.
	Failures int
	// Until is when the current backoff ends; zero when none is running.
	Until time.Time
}

// Active reports whether the group is still backing off at now.
func (s BackoffState) Active(now time.Time) bool { return now.Before(s.Until) }

// Fail records a failure at now. A failure reported while a backoff is already
// running (the siblings rejected by the same release) does not extend it: one
// gang failure is one doubling.
func (b Backoff) Fail(s BackoffState, now time.Time) (BackoffState, bool) {
	if s.Active(now) {
		return s, false
	}
	s.Failures++
	d := b.Base
	for i := 1; i < s.Failures && d > 0 && d < b.Max; i++ {
		if d > b.Max/2 { // doubling reaches the cap (and could overflow)
			d = b.Max
			break
		}
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	s.Until = now.Add(d)
	return s, true
}

// MinRequest is what a group needs before it can run: minResources when set,
// else, per resource, the sum of the minMember smallest member requests. The
// per-resource sum is a lower bound of every minMember-subset's need, so a check
// against it never refuses a gang that some subset could satisfy. With fewer
// members than minMember (one was deleted and its controller will create it
// again) each missing member counts as the smallest known one: an admitted
// gang keeps the room for its whole minimum instead of letting another gang
// be admitted into it.
func MinRequest(spec Spec, members []resources.List) resources.List {
	if spec.MinResources != nil {
		return spec.MinResources.Clone()
	}
	k := int(spec.MinMember)
	missing := 0
	if k > len(members) {
		k, missing = len(members), k-len(members)
	}
	if k < 0 { // invalid spec: nothing to sum
		k = 0
	}
	names := map[string]struct{}{}
	for _, m := range members {
		for n := range m {
			names[n] = struct{}{}
		}
	}
	out := make(resources.List, len(names))
	vals := make([]int64, len(members))
	for n := range names {
		for i, m := range members {
			vals[i] = m[n]
		}
		sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
		var sum int64
		for _, v := range vals[:k] {
			sum += v
		}
		if k > 0 {
			sum += int64(missing) * vals[0]
		}
		if sum != 0 {
			out[n] = sum
		}
	}
	return out
}

// UnschedulableMessage is the message users see on a PodGroup whose member did
// not fit: "3/8 members unschedulable: 0/4 nodes are available: 4 Insufficient cpu."
func UnschedulableMessage(spec Spec, c Counts, reason string) string {
	total := c.Active
	if int(spec.MinMember) > total {
		total = int(spec.MinMember)
	}
	return fmt.Sprintf("%d/%d members unschedulable: %s", total-c.Placed, total, reason)
}

// SummarizeReasons renders per-reason node counts the way the scheduler's own
// FitError does: "0/4 nodes are available: 3 Insufficient cpu, 1 node(s) had
// untolerated taint." Reasons with the highest counts come first.
func SummarizeReasons(nodes int, reasons map[string]int) string {
	type rc struct {
		r string
		n int
	}
	list := make([]rc, 0, len(reasons))
	for r, n := range reasons {
		list = append(list, rc{r, n})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return list[i].r < list[j].r
	})
	parts := make([]string, len(list))
	for i, x := range list {
		parts[i] = fmt.Sprintf("%d %s", x.n, x.r)
	}
	msg := fmt.Sprintf("0/%d nodes are available", nodes)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, ", ")
	}
	return msg + "."
}

// Notice is the Event a group's state calls for. Reason is empty when the state
// calls for none.
type Notice struct {
	Warning bool
	Reason  string
	Message string
}

// Event reasons on PodGroups (and on member pods while their PodGroup is missing).
const (
	ReasonWaiting       = "Waiting"
	ReasonInvalidSpec   = "InvalidSpec"
	ReasonUnschedulable = "Unschedulable"
	ReasonScheduled     = "Scheduled"
)

// NoticeOf returns the Event for a group's current state. Messages carry no
// counts that move while the state holds (which members failed, how many are
// bound), so one state yields one Event; the exception is "waiting for members:
// 2/3", whose count is what the user needs, and which the status writer
// samples at most once a sync period while members trickle in.
func NoticeOf(groupKey string, exists bool, spec Spec, c Counts, unschedulable string) Notice {
	switch {
	case !exists:
		if c.Active == 0 {
			return Notice{}
		}
		return Notice{Warning: true, Reason: ReasonWaiting, Message: "waiting for PodGroup " + groupKey}
	case spec.Validate() != nil:
		return Notice{Warning: true, Reason: ReasonInvalidSpec, Message: "PodGroup " + groupKey + " is invalid: " + spec.Validate().Error()}
	case c.Bound >= int(spec.MinMember):
		return Notice{Reason: ReasonScheduled, Message: fmt.Sprintf("gang scheduled: minMember %d bound", spec.MinMember)}
	case unschedulable != "":
		return Notice{Warning: true, Reason: ReasonUnschedulable, Message: unschedulable}
	case c.Members > 0 && int32(c.Reachable()) < spec.MinMember:
		return Notice{Reason: ReasonWaiting, Message: waitingForMembers(spec, c)}
	}
	return Notice{}
}
