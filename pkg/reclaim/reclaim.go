// Package reclaim is Caldera's victim selection: Volcano's reclaim (across
// queues) and preempt (within a queue) actions as one pure decision. Given
// the pods on the nodes, the queues' allocated and deserved amounts and a
// preemptor group that does not fit, Decide picks the running pods whose
// eviction lets the WHOLE group fit, or none at all.
//
// It is policy only: no Kubernetes client or framework types. The
// CalderaReclaim plugin builds an Input from the scheduler's snapshot and
// Caldera's cache, and hands the Plan to the upstream preemption executor.
package reclaim

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// Mode says which action produced a plan.
type Mode uint8

const (
	// None: no plan.
	None Mode = iota
	// Reclaim takes from other queues what they hold above their deserved share.
	Reclaim
	// Preempt takes from lower-priority groups of the preemptor's own queue.
	Preempt
)

// String returns the mode as it appears in Events and metrics.
func (m Mode) String() string {
	switch m {
	case Reclaim:
		return "reclaim"
	case Preempt:
		return "preempt"
	default:
		return "none"
	}
}

// Queue is what the decision reads about one queue.
type Queue struct {
	// Allocated is what the queue's own running pods request.
	Allocated resources.List
	// Deserved is the queue's fair share.
	Deserved resources.List
	// Guarantee is never reclaimed.
	Guarantee resources.List
	// Reclaimable: other queues may reclaim what it holds above Deserved.
	Reclaimable bool
}

// Pod is a running (bound, not terminating) pod: a possible victim.
type Pod struct {
	// ID names the pod (namespace/name) in the Plan.
	ID string
	// Node is the node the pod runs on.
	Node string
	// Group is the pod's group key; "" for a pod outside any group (a
	// singleton). Pods of a gang share it.
	Group string
	// Queue is the queue the pod is accounted to; "" for pods outside
	// Caldera's queues, which are never victims.
	Queue string
	// Priority is the pod's group priority.
	Priority int32
	// Started is when the pod started running (or was bound).
	Started time.Time
	// Request is what the pod requests; it is freed on its node when evicted.
	Request resources.List
	// Disruptive: evicting the pod would violate a PodDisruptionBudget
	// whatever else is taken. Such pods are taken last, as the default
	// preemption does.
	Disruptive bool
	// Budgets are the indexes in Input.Budgets of the PodDisruptionBudgets
	// that cover the pod. Each victim spends one disruption of each; a
	// victim that takes a budget below zero violates it, and is taken only
	// when no plan without the violation exists (upstream's
	// filterPodsWithPDBViolation counts the same way).
	Budgets []int
}

// Group describes a victim gang: how many of its members must keep running.
type Group struct {
	// MinMember is the gang's minMember; 0 or 1 is a group of one.
	MinMember int32
	// Whole: the group's running pods are one victim, taken all together or
	// not at all, whatever MinMember says (upstream's disruptionMode all).
	Whole bool
}

// Node is a node the preemptor's members may use.
type Node struct {
	// Name names the node.
	Name string
	// Free is allocatable minus what the node's pods request.
	Free resources.List
	// Eligible: the preemptor's pods may run here once room is made (the
	// scheduler's filters failed only for lack of room). Ineligible nodes
	// are neither placed on nor stripped.
	Eligible bool
}

// Preemptor is the group that does not fit.
type Preemptor struct {
	// Group is the preemptor's group key (its own pods are never victims).
	Group string
	// Queue is the preemptor's queue.
	Queue string
	// Priority is the preemptor's group priority.
	Priority int32
	// Members are the requests of the members that still need a node; the
	// first is the pod being scheduled now. The whole list must fit.
	Members []resources.List
	// MemberIDs optionally name the pods behind Members, index for index,
	// so that the caller can hold each member's planned node for it.
	MemberIDs []string
}

// Options switch the actions and guard young pods.
type Options struct {
	// Reclaim enables reclaim across queues.
	Reclaim bool
	// Preempt enables preemption within a queue.
	Preempt bool
	// MinRuntime protects pods that started less than this before Now.
	MinRuntime time.Duration
	// Now is the time MinRuntime is measured against.
	Now time.Time
}

// Input is everything Decide reads.
type Input struct {
	Preemptor Preemptor
	Queues    map[string]Queue
	Groups    map[string]Group
	Pods      []Pod
	Nodes     []Node
	// Budgets are the disruptions each PodDisruptionBudget still allows
	// (status.disruptionsAllowed); Pod.Budgets index it.
	Budgets []int32
	// Deficits are room the victims must free in given queues besides
	// making the members fit: the preemptor was admitted on room that
	// evictions in its queue or subtree free, and without them its
	// members would take a queue past its capability.
	Deficits []Deficit
	Options  Options
}

// Plan is a decision to evict.
type Plan struct {
	// Mode is the action that found the victims.
	Mode Mode
	// Victims are indexes into Input.Pods, most important first.
	Victims []int
	// Node is where the preemptor's first member goes once the victims are gone.
	Node string
	// Placement is the node of every member, index for index with
	// Preemptor.Members (Placement[0] == Node): the room the plan frees for
	// each, which the caller holds for the gang until it binds.
	Placement []string
}

// Decide returns the plan that lets the whole preemptor fit with the fewest
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
// above minMember (most recently started first), or all of them; a Whole
// group gives up all of them or none. Plans made
// of single pods are preferred; whole gangs are taken only when no such plan
// exists. Within that, lower priority goes first, then the most recently
// started. Pods younger than MinRuntime are never victims.
//
// The fit is a resource check: every member placed first-fit-decreasing on
// eligible nodes with the victims' requests freed. The caller re-runs the
// scheduler's filters for the first member on Plan.Node.
func Decide(in Input) (Plan, bool, string) {
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
		s.round++
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
		if s.nTaken == 0 {
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

// eligible applies the mode's victim rules that do not depend on what else
// is taken.
func (s *state) eligible(i int) bool {
	p, pre := &s.in.Pods[i], &s.in.Preemptor
	if p.Queue == "" || (pre.Group != "" && p.Group == pre.Group) {
		return false
	}
	if s.podEligible[i] < 0 && !s.gangMember(p) && !s.inDeficit(p) {
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
func (s *state) gangMember(p *Pod) bool {
	if p.Group == "" {
		return false
	}
	g := s.in.Groups[p.Group]
	return g.MinMember > 1 || g.Whole
}

func (s *state) reset() {
	// free and used are filled in on the first change of a node (mutFree,
	// greedy): at 5000 nodes cloning every node's lists was a good part of
	// a decision.
	s.free = make([]resources.List, len(s.in.Nodes))
	s.used = make([]resources.List, len(s.in.Nodes))
	s.touched.reset(len(s.in.Nodes))
	s.occupied.reset(len(s.in.Nodes))
	s.taken = make([]bool, len(s.in.Pods))
	s.nTaken, s.broken = 0, 0
	s.spent = make([]int32, len(s.in.Budgets))
	s.takenQ = map[string]resources.List{}
	s.takenG = make([]int32, len(s.running))
	s.steps = s.steps[:0]
}

// freeOf is node i's free room: Free plus what its taken pods request.
func (s *state) freeOf(i int) resources.List {
	if s.free[i] == nil {
		return s.in.Nodes[i].Free
	}
	return s.free[i]
}

// mutFree is node i's free room to change; the node is marked touched.
func (s *state) mutFree(i int) resources.List {
	if s.free[i] == nil {
		s.free[i] = s.in.Nodes[i].Free.Clone()
		s.touched.add(i)
	}
	return s.free[i]
}

// comparePods orders candidate pods: lower priority, most recently started, ID.
func (s *state) comparePods(a, b int) int {
	pa, pb := &s.in.Pods[a], &s.in.Pods[b]
	if c := cmp.Compare(pa.Priority, pb.Priority); c != 0 {
		return c
	}
	if c := pb.Started.Compare(pa.Started); c != 0 {
		return c
	}
	return strings.Compare(pa.ID, pb.ID)
}

// place puts the members first-fit-decreasing and returns the first
// member's node. What the members use is kept aside (placedAt) for the
// few nodes they go to, rather than in a copy of every node's room.
func (s *state) place() (string, bool) {
	defer func() {
		for _, i := range s.placedOn.list {
			s.placedAt[i] = nil
		}
		s.placedOn.reset(len(s.in.Nodes))
	}()
	for _, m := range s.order {
		req := s.in.Preemptor.Members[m]
		placed := s.firstFit(m, &s.placedOn, s.placedAt)
		if placed < 0 {
			return "", false
		}
		if s.placedAt[placed] == nil {
			s.placedOn.add(placed)
		}
		s.placedAt[placed] = s.placedAt[placed].Add(req)
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
