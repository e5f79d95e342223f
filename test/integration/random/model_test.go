package random_test

import (
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// groupLabel names the generator's group of every pod it creates (gang or
// singleton), so that the model never has to guess.
const groupLabel = "random.caldera.dev/group"

// The model is the cluster as the API shows it at one moment, reduced to what
// the invariants need: cpu only (the generator's pods request nothing else),
// in millicores.

type podState struct {
	Name        string
	Group       string
	Queue       string
	CPU         int64
	Priority    int32
	Node        string
	Nominated   string // status.nominatedNodeName: upstream holds room there for it
	Finished    bool   // Succeeded or Failed: holds nothing
	Terminating bool   // deletionTimestamp set: on its way out
	Gated       bool   // has scheduling gates: not offered to the scheduler yet
	Selector    map[string]string
	// Bounded: the pod has a run-time limit as the scheduler reads it
	// (pkg/runlimit, with its PodGroup's annotation).
	Bounded bool
}

// alive is a bound pod that still holds its node's room.
func (p *podState) alive() bool { return p.Node != "" && !p.Finished }

// holding is an alive pod that is not being deleted: what counts against
// its queue (see the capability invariant).
func (p *podState) holding() bool { return p.alive() && !p.Terminating }

// pending is a pod the scheduler still has to place (a gated pod is not
// offered to it yet).
func (p *podState) pending() bool { return p.Node == "" && !p.Finished && !p.Terminating && !p.Gated }

type groupState struct {
	Name string
	// UID is the PodGroup's, or for a gang by annotation its owner's: a
	// group submitted again is a new gang. The owner, not the PodGroup the
	// scheduler creates, is what a submission makes.
	UID       string
	Gang      bool // has a PodGroup, or asks for one by annotation
	MinMember int
	Timeout   int32
	Queue     string
	Priority  int32
	Pods      []*podState
}

func (g *groupState) count(f func(*podState) bool) int {
	n := 0
	for _, p := range g.Pods {
		if f(p) {
			n++
		}
	}
	return n
}

type nodeState struct {
	Name   string
	Alloc  int64
	Used   int64 // alive pods, terminating ones included
	Labels map[string]string
}

type snapshot struct {
	Nodes  []*nodeState // sorted by name
	Groups map[string]*groupState
	Pods   []*podState
	Queues []qapi.Queue
	PGs    []pgView // sorted by name
}

// pgView is what the reservation checks read of a PodGroup: the scheduler's
// annotations.
type pgView struct {
	Name, UID string
	// ETA is the expected-start annotation, zero without one (or when it
	// does not parse).
	ETA      time.Time
	Admitted bool // the admitted-at annotation is set
	Verdict  string
}

// newSnapshot builds the model. Nodes are limited to names (the seed's own);
// pods to the generator's.
func newSnapshot(nodes []*v1.Node, names map[string]bool, pods []*v1.Pod, pgs []*v1alpha1.PodGroup, queues []qapi.Queue) *snapshot {
	s := &snapshot{Groups: map[string]*groupState{}, Queues: queues}
	byName := map[string]*nodeState{}
	for _, n := range nodes {
		if !names[n.Name] {
			continue
		}
		ns := &nodeState{Name: n.Name, Alloc: n.Status.Allocatable.Cpu().MilliValue(), Labels: n.Labels}
		s.Nodes = append(s.Nodes, ns)
		byName[n.Name] = ns
	}
	sort.Slice(s.Nodes, func(i, j int) bool { return s.Nodes[i].Name < s.Nodes[j].Name })
	groupAnn := map[string]map[string]string{}
	for _, pg := range pgs {
		groupAnn[pg.Name] = pg.Annotations
		v := pgView{Name: pg.Name, UID: string(pg.UID), Admitted: pg.Annotations[qapi.AdmittedAtAnnotation] != "", Verdict: pg.Annotations[qapi.VerdictAnnotation]}
		if at, err := time.Parse(time.RFC3339, pg.Annotations[qapi.ExpectedStartAnnotation]); err == nil {
			v.ETA = at
		}
		s.PGs = append(s.PGs, v)
		uid := string(pg.UID)
		if pg.Labels[qapi.ManagedByLabel] == qapi.ManagedByCaldera && len(pg.OwnerReferences) > 0 {
			uid = string(pg.OwnerReferences[0].UID)
		}
		s.Groups[pg.Name] = &groupState{
			Name: pg.Name, UID: uid, Gang: true, MinMember: int(pg.Spec.MinMember),
			Timeout: ptrOr(pg.Spec.ScheduleTimeoutSeconds, 60), Queue: pg.Labels[qapi.QueueLabel],
		}
	}
	sort.Slice(s.PGs, func(i, j int) bool { return s.PGs[i].Name < s.PGs[j].Name })
	for _, p := range pods {
		if p.Labels[groupLabel] == "" {
			continue
		}
		// The scheduler's own rule (label, Volcano annotation, gang
		// annotation); a singleton is its own group, by the generator's name.
		g := p.Labels[groupLabel]
		key, inGroup := gangbook.GroupKeyOf(p)
		if inGroup {
			g = key.Name
		}
		ps := &podState{
			Name: p.Name, Group: g, Queue: p.Labels[qapi.QueueLabel], Node: p.Spec.NodeName,
			Nominated:   p.Status.NominatedNodeName,
			Finished:    p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed,
			Terminating: p.DeletionTimestamp != nil, Selector: p.Spec.NodeSelector,
			Gated: len(p.Spec.SchedulingGates) > 0,
		}
		for _, c := range p.Spec.Containers {
			ps.CPU += c.Resources.Requests.Cpu().MilliValue()
		}
		var ann map[string]string
		if inGroup {
			ann = groupAnn[key.Name]
		}
		lim, _ := runlimit.Of(p, ann)
		ps.Bounded = lim.Bounded()
		if p.Spec.Priority != nil {
			ps.Priority = *p.Spec.Priority
		}
		s.Pods = append(s.Pods, ps)
		if ps.alive() {
			if n := byName[ps.Node]; n != nil {
				n.Used += ps.CPU
			}
		}
		gs := s.Groups[g]
		implicit, asks := annotation.GroupOf(p)
		annotated := inGroup && asks && key.Name == implicit && p.Labels[v1alpha1.PodGroupLabel] == ""
		switch {
		case gs == nil && annotated:
			// A gang by annotation whose PodGroup the scheduler has not
			// created (yet, or again): the annotations say what it will be.
			n, _ := annotation.MinMember(p)
			timeout, _ := annotation.TimeoutSeconds(p)
			gs = &groupState{Name: g, Gang: true, MinMember: int(n), Timeout: ptrOr(&timeout, 60), Queue: ps.Queue}
			s.Groups[g] = gs
		case gs == nil && inGroup:
			// A member whose PodGroup is gone (deleted): no gang rules
			// apply to it any more, and the model leaves it out of groups.
			continue
		case gs == nil:
			gs = &groupState{Name: g, MinMember: 1, Queue: ps.Queue}
			s.Groups[g] = gs
		}
		if annotated {
			// The members' owner is the submission, whatever owner a
			// PodGroup left from an earlier one names.
			gs.UID = string(annotation.ControllerOf(p).UID)
		}
		gs.Pods = append(gs.Pods, ps)
		gs.Priority = max(gs.Priority, ps.Priority)
	}
	for _, g := range s.Groups {
		sort.Slice(g.Pods, func(i, j int) bool { return g.Pods[i].Name < g.Pods[j].Name })
	}
	return s
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil || *p <= 0 {
		return def // 0 and negative mean the plugin default (docs/reliability.md rows 16-17)
	}
	return *p
}

func (s *snapshot) node(name string) *nodeState {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// queueHolding is what each queue's own pods hold (holding pods, by the
// pod's queue label).
func (s *snapshot) queueHolding() map[string]int64 {
	out := map[string]int64{}
	for _, p := range s.Pods {
		if p.holding() {
			out[p.Queue] += p.CPU
		}
	}
	return out
}

// subtree adds each queue's descendants' amounts to its own (one level of
// hierarchy, but written for any depth).
func (s *snapshot) subtree(own map[string]int64) map[string]int64 {
	parent := map[string]string{}
	for _, q := range s.Queues {
		parent[q.Name] = q.Spec.Parent
	}
	out := map[string]int64{}
	for name, v := range own {
		seen := map[string]bool{}
		for q := name; q != "" && q != queue.RootName && !seen[q]; q = parent[q] {
			seen[q] = true
			out[q] += v
		}
	}
	return out
}

func (s *snapshot) ancestors(name string) []string {
	parent := map[string]string{}
	for _, q := range s.Queues {
		parent[q.Name] = q.Spec.Parent
	}
	var out []string
	seen := map[string]bool{}
	for q := name; q != "" && q != queue.RootName && !seen[q]; q = parent[q] {
		seen[q] = true
		out = append(out, q)
	}
	return out
}

// eligible says whether a group can be scheduled at all now, and how many
// more of its pods the scheduler must place together: minMember for a gang
// that has not started (enough members exist, none bound), 1 for a pending
// pod of a started gang (alive bound >= minMember: the rest are elastic
// extras) or a singleton. Gangs in any other state (partially bound before
// they started, or started and shrunk below minMember by completions) are
// left out of the liveness checks: what a scheduler should do with their
// remaining members is not pinned down.
func (g *groupState) eligible() (need int, ok bool) {
	pending := g.count((*podState).pending)
	if pending == 0 {
		return 0, false
	}
	if !g.Gang {
		return 1, true
	}
	bound := g.count(func(p *podState) bool { return p.Node != "" })
	alive := g.count((*podState).alive)
	switch {
	case bound == 0 && pending >= g.MinMember:
		return g.MinMember, true
	case alive >= g.MinMember && alive == bound:
		return 1, true
	}
	return 0, false
}

// memberCPU is the request of the group's pending pods (all the same size).
func (g *groupState) memberCPU() int64 {
	for _, p := range g.Pods {
		if p.pending() {
			return p.CPU
		}
	}
	return 0
}

func (g *groupState) selector() map[string]string {
	for _, p := range g.Pods {
		if p.pending() {
			return p.Selector
		}
	}
	return nil
}

// shares divides the cluster with pkg/queue.Divide (the pure weighted
// water-filling the scheduler uses). Demand is estimated from the API: high
// counts every pending pod, low only what an eligible group must place next
// (eligible's need); high says which queues' groups get the high estimate.
// The checks use whichever estimate makes them less likely to fire, so that
// an estimate of demand different from the scheduler's own cannot produce a
// false alarm (queueViews).
func (s *snapshot) shares(high func(queue string) bool) *queue.Shares {
	var specs []queue.Spec
	for _, q := range s.Queues {
		sp := queue.Spec{
			Name: q.Name, Parent: q.Spec.Parent, Weight: q.Spec.Weight,
			Reclaimable: q.Spec.Reclaimable == nil || *q.Spec.Reclaimable,
			State:       queue.StateOpen,
		}
		if c, ok := q.Spec.Capability[v1.ResourceCPU]; ok {
			sp.Capability = resources.List{"cpu": c.MilliValue()}
		}
		if g, ok := q.Spec.Guarantee[v1.ResourceCPU]; ok {
			sp.Guarantee = resources.List{"cpu": g.MilliValue()}
		}
		if q.Spec.State == qapi.QueueStateClosed {
			sp.State = queue.StateClosed
		}
		specs = append(specs, sp)
	}
	var total int64
	for _, n := range s.Nodes {
		total += n.Alloc
	}
	usage := map[string]queue.Usage{}
	add := func(q string, alloc, pending int64) {
		u := usage[q]
		if u.Allocated == nil {
			u.Allocated, u.Pending = resources.List{"cpu": 0}, resources.List{"cpu": 0}
		}
		u.Allocated["cpu"] += alloc
		u.Pending["cpu"] += pending
		usage[q] = u
	}
	for q, v := range s.queueHolding() {
		add(q, v, 0)
	}
	for _, g := range s.Groups {
		need, ok := g.eligible()
		n := int64(need)
		if high(g.Queue) {
			// Every pending pod, of eligible groups or not: the scheduler
			// counts as its queue's demand what the model finds no way to
			// place yet too, e.g. the pending tail of a gang whose first
			// members succeeded (minMember of them left: placed together).
			n = int64(g.count((*podState).pending))
			ok = n > 0
		}
		if !ok {
			continue
		}
		add(g.Queue, 0, n*g.memberCPU())
	}
	return queue.Divide(queue.BuildTree(specs), resources.List{"cpu": total}, usage)
}

// queueView is one queue's numbers for the checks, conservative both ways.
type queueView struct {
	Holding     int64 // subtree
	DeservedLo  int64 // the lower of the two estimates
	DeservedHi  int64
	RealCapLo   int64 // -1: unbounded
	Guarantee   int64
	Reclaimable bool
}

// A queue's deserved share grows with its own demand and shrinks with the
// others', so its two bounds come from two divisions: its subtree's demand
// low and everyone else's high, and the other way round. (One division per
// estimate for all queues would not bound the scheduler's: with a finished
// gang's pending tail counted in one queue, another's share falls below
// what either single estimate gives it.) Two Divides per queue per
// snapshot; the harness has at most a dozen queues.
func (s *snapshot) queueViews() map[string]queueView {
	holding := s.subtree(s.queueHolding())
	out := map[string]queueView{}
	for _, q := range s.Queues {
		inSubtree := func(name string) bool { return slices.Contains(s.ancestors(name), q.Name) }
		lo := s.shares(func(name string) bool { return !inSubtree(name) })
		hi := s.shares(inSubtree)
		a, okA := lo.Get(q.Name)
		b, okB := hi.Get(q.Name)
		if !okA || !okB {
			continue // a broken queue: no share, no checks
		}
		v := queueView{
			Holding:     holding[q.Name],
			DeservedLo:  min(a.Deserved["cpu"], b.Deserved["cpu"]),
			DeservedHi:  max(a.Deserved["cpu"], b.Deserved["cpu"]),
			RealCapLo:   min(a.RealCapability["cpu"], b.RealCapability["cpu"]),
			Reclaimable: q.Spec.Reclaimable == nil || *q.Spec.Reclaimable,
		}
		if g, ok := q.Spec.Guarantee[v1.ResourceCPU]; ok {
			v.Guarantee = g.MilliValue()
		}
		out[q.Name] = v
	}
	return out
}

// matches says whether a node satisfies a node selector.
func matches(sel map[string]string, n *nodeState) bool {
	return labels.SelectorFromSet(sel).Matches(labels.Set(n.Labels))
}

func (s *snapshot) children(name string) int {
	n := 0
	for _, q := range s.Queues {
		if q.Spec.Parent == name {
			n++
		}
	}
	return n
}
