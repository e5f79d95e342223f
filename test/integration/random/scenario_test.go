package random_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// The scenario is a pure function of the seed: Generate draws every node,
// queue, group and action from one PCG stream and reads nothing else, so a
// replay submits exactly the same objects in the same order. Only timing
// (and so what the scheduler did with them) can differ between runs.

// Label keys and values the generator puts on nodes and in node selectors.
const (
	zoneLabel = "topology.kubernetes.io/zone"
	diskLabel = "random.caldera.dev/disk"
	diskSSD   = "ssd"
	// timeline is how long the generator keeps acting; quiescence checks
	// follow it. Together with start-up and the checks this keeps a seed to
	// roughly 60-90 s.
	timeline = 30 * time.Second
	// minLimit and maxLimit bound a declared run-time limit, in seconds: on
	// the scale of the timeline, so that reservations wait for ends that
	// come within a seed, and backfill is sometimes possible and sometimes
	// not.
	minLimit, maxLimit = 8, 40
)

// nodeSpec is one node to create.
type nodeSpec struct {
	CPU    int // whole cpus
	Labels map[string]string
}

// queueSpec is one Caldera Queue. CPU amounts are whole cpus; 0 means unset.
type queueSpec struct {
	Name        string
	Parent      string // "" for a top-level queue
	Weight      int32
	Capability  int
	Guarantee   int
	Reclaimable bool
}

// groupSpec is a gang (PodGroup with Members pods) or, when Singleton, one
// pod without a PodGroup. An Annotated gang asks for its PodGroup by
// annotation (docs/gangs.md): the harness creates an owner object instead,
// and the scheduler creates the PodGroup.
type groupSpec struct {
	Name      string
	Queue     string
	Singleton bool
	Members   int
	MinMember int
	CPU       int // per member, whole cpus
	Priority  int32
	Timeout   int32             // scheduleTimeoutSeconds
	Selector  map[string]string // node selector of every member; nil for none
	// Gated: the last member is created with a scheduling gate, removed by
	// a later ungate action (as a job controller holding one pod back does).
	Gated bool
	// Annotated: the members carry the gang annotations and a controller
	// ownerReference to a ConfigMap the harness creates per submission,
	// not the pod-group label; no hand-written PodGroup.
	Annotated bool
	// Limit is the group's declared run-time limit in whole seconds (0:
	// unbounded), declared as LimitVia says (docs/runlimits.md); every
	// source the harness writes holds the room for exactly Limit seconds
	// (its pods have no termination grace). Run is how long each bounded
	// member runs once bound: the kubelet stand-in (runner_test.go) sets
	// it Succeeded then, always before its limit, since a limit is a
	// promise. A member without a limit of its own (limitPartial's last)
	// runs until an action ends it.
	Limit    int
	LimitVia limitSource
	Run      time.Duration
}

// limitSource is where a bounded group declares its limit.
type limitSource string

const (
	limitNone          limitSource = ""
	limitGroupAnnot    limitSource = "pg-annotation"       // max-run-seconds on the hand-written PodGroup
	limitPodAnnot      limitSource = "pod-annotation"      // max-run-seconds on every member
	limitDeadline      limitSource = "deadline"            // spec.activeDeadlineSeconds on every member
	limitDeadlineLoose limitSource = "annotation<deadline" // both: the annotation Limit, the deadline 10 s more (the smallest wins)
	// limitPartial: the pod annotation on every member but the last, which
	// has none, so the gang has no limit for the plan (a gang's limit is
	// its longest member's), while its other members' ends are known.
	limitPartial limitSource = "all-but-one"
)

// actionKind says what an action does.
type actionKind string

const (
	actSubmit    actionKind = "submit"    // create the group (PodGroup or owner, then its pods)
	actComplete  actionKind = "complete"  // set the group's bound, unfinished pods Succeeded
	actDelete    actionKind = "delete"    // delete the group's pods, owner and PodGroup
	actDeletePod actionKind = "deletepod" // delete one member pod (index Arg)
	actMinMember actionKind = "minmember" // set the PodGroup's minMember to Arg (the created one if annotated)
	actRelabel   actionKind = "relabel"   // toggle the disk label of node Arg
	actKill      actionKind = "kill"      // SIGKILL the scheduler and start a new one
	actUngate    actionKind = "ungate"    // remove the scheduling gate of the group's last member
)

// action is one step of the scenario, At after the scenario's start.
type action struct {
	At    time.Duration
	Kind  actionKind
	Group int // index into scenario.Groups, -1 when the action has no group
	Arg   int
}

// scenario is everything one seed plays.
type scenario struct {
	Seed uint64
	// Lend turns CalderaEnqueue's lendIdleRoom on (the shipped
	// configuration has it off): odd seeds, so that a bounded run covers
	// both, and every scenario a seed made before lending stays the same.
	Lend    bool
	Nodes   []nodeSpec
	Queues  []queueSpec
	Groups  []groupSpec
	Actions []action // sorted by At
}

// leafQueues are the queues groups are submitted to: those without
// children. Groups in a parent queue compete with its children as one more
// child (pkg/queue.Divide); leaving that out keeps every share unambiguous.
func (s *scenario) leafQueues() []string {
	parents := map[string]bool{}
	for _, q := range s.Queues {
		if q.Parent != "" {
			parents[q.Parent] = true
		}
	}
	var out []string
	for _, q := range s.Queues {
		if !parents[q.Name] {
			out = append(out, q.Name)
		}
	}
	return out
}

func (s *scenario) clusterCPU() int {
	n := 0
	for _, node := range s.Nodes {
		n += node.CPU
	}
	return n
}

func (s *scenario) maxNodeCPU() int {
	m := 0
	for _, node := range s.Nodes {
		m = max(m, node.CPU)
	}
	return m
}

// Generate builds the scenario of a seed.
func Generate(seed uint64) *scenario {
	rng := rand.New(rand.NewPCG(seed, 0x63616c64657261)) // "caldera"
	s := &scenario{Seed: seed, Lend: seed%2 == 1}
	pick := func(xs ...int) int { return xs[rng.IntN(len(xs))] }

	for i := range 4 + rng.IntN(9) { // 4-12 nodes
		labels := map[string]string{zoneLabel: []string{"a", "b"}[i%2]}
		if rng.IntN(3) == 0 {
			labels[diskLabel] = diskSSD
		}
		s.Nodes = append(s.Nodes, nodeSpec{CPU: pick(4, 8, 8, 16), Labels: labels})
	}
	total := s.clusterCPU()

	// Queue names are short and seed-qualified: one Env runs many seeds, and
	// queues are cluster-scoped.
	nq := 2 + rng.IntN(4) // 2-5 queues
	guaranteed := 0
	for i := range nq {
		q := queueSpec{
			Name:        fmt.Sprintf("r%d-q%d", seed, i),
			Weight:      int32(1 + rng.IntN(4)),
			Reclaimable: rng.IntN(4) != 0,
		}
		// One level of hierarchy: a later queue may hang under an earlier
		// top-level one.
		if i > 0 && rng.IntN(3) == 0 {
			var tops []string
			for _, p := range s.Queues {
				if p.Parent == "" {
					tops = append(tops, p.Name)
				}
			}
			q.Parent = tops[rng.IntN(len(tops))]
		}
		if rng.IntN(3) == 0 {
			q.Capability = max(4, total*(30+rng.IntN(50))/100)
		}
		// Guarantees of top-level queues only, adding up to at most a third
		// of the cluster, so they are always satisfiable.
		if q.Parent == "" && rng.IntN(3) == 0 {
			g := max(1, total*(5+rng.IntN(15))/100)
			if q.Capability > 0 {
				g = min(g, q.Capability)
			}
			if guaranteed+g <= total/3 {
				q.Guarantee = g
				guaranteed += g
			}
		}
		s.Queues = append(s.Queues, q)
	}
	// A parent's capability must leave room for its children to run.
	for i, q := range s.Queues {
		if q.Parent == "" {
			continue
		}
		for j := range s.Queues {
			if s.Queues[j].Name == q.Parent && s.Queues[j].Capability > 0 && s.Queues[j].Capability < 8 {
				s.Queues[j].Capability = 8
			}
		}
		if q.Capability > 0 && q.Capability < 4 {
			s.Queues[i].Capability = 4
		}
	}
	leaves := s.leafQueues()
	// Which gangs ask for their PodGroup by annotation comes from a stream of
	// its own: the main stream, and so every scenario drawn before this
	// choice existed, is unchanged but for that choice.
	annot := rand.New(rand.NewPCG(seed, 0x616e6e6f74)) // "annot"
	// Run-time limits come from a stream of their own too, drawn the same
	// way for every group whatever it is, so a seed's other choices are
	// the same as before limits existed.
	limits := rand.New(rand.NewPCG(seed, 0x6c696d6974)) // "limit"

	maxCPU := s.maxNodeCPU()
	ng := 14 + rng.IntN(12)
	for i := range ng {
		g := groupSpec{
			Name:     fmt.Sprintf("g%d", i),
			Queue:    leaves[rng.IntN(len(leaves))],
			Priority: []int32{0, 0, 100, 1000}[rng.IntN(4)],
			Timeout:  int32(5 + rng.IntN(11)),
		}
		if rng.IntN(3) == 0 {
			g.Singleton = true
			g.Name = fmt.Sprintf("s%d", i)
			g.Members, g.MinMember = 1, 1
			g.CPU = 1 + rng.IntN(min(8, maxCPU))
		} else {
			g.Members = 1 + rng.IntN(16)
			g.CPU = 1 + rng.IntN(min(8, maxCPU))
			// Keep most gangs within the cluster; a few may be too big and
			// must simply never bind.
			for g.Members*g.CPU > total && rng.IntN(5) != 0 {
				g.CPU = max(1, g.CPU/2)
				if g.CPU == 1 && g.Members*g.CPU > total {
					g.Members = max(1, total/2)
				}
			}
			g.MinMember = g.Members
			if g.Members > 1 && rng.IntN(2) == 0 {
				g.MinMember = 1 + rng.IntN(g.Members-1) // elastic
			}
		}
		switch rng.IntN(6) {
		case 0:
			g.Selector = map[string]string{zoneLabel: []string{"a", "b"}[rng.IntN(2)]}
		case 1:
			g.Selector = map[string]string{diskLabel: diskSSD}
		}
		if !g.Singleton && g.Members > 1 && rng.IntN(5) == 0 {
			g.Gated = true
		}
		if !g.Singleton && annot.IntN(4) == 0 {
			g.Annotated = true
		}
		g.drawLimit(limits)
		s.Groups = append(s.Groups, g)
		at := time.Duration(rng.Int64N(int64(timeline * 2 / 3)))
		s.Actions = append(s.Actions, action{At: at, Kind: actSubmit, Group: i})
		if g.Gated {
			s.Actions = append(s.Actions, action{At: at + time.Duration(rng.Int64N(int64(timeline-at))), Kind: actUngate, Group: i})
		}

		// What happens to the group later, if anything.
		later := func() time.Duration {
			return at + time.Duration(rng.Int64N(int64(timeline-at)))
		}
		switch r := rng.IntN(10); {
		case r < 4:
			s.Actions = append(s.Actions, action{At: later(), Kind: actComplete, Group: i})
		case r < 5:
			del := later()
			s.Actions = append(s.Actions, action{At: del, Kind: actDelete, Group: i})
			// Half the deleted groups come back under the same names (a
			// job resubmitted): nothing of the old one may linger.
			if rng.IntN(2) == 0 {
				s.Actions = append(s.Actions, action{At: del + time.Duration(rng.Int64N(int64(timeline-del)+1)), Kind: actSubmit, Group: i})
			}
		case r < 6 && !g.Singleton:
			s.Actions = append(s.Actions, action{At: later(), Kind: actDeletePod, Group: i, Arg: rng.IntN(g.Members)})
		case r < 7 && !g.Singleton:
			s.Actions = append(s.Actions, action{At: later(), Kind: actMinMember, Group: i, Arg: 1 + rng.IntN(g.Members)})
		}
	}
	for range rng.IntN(3) {
		s.Actions = append(s.Actions, action{
			At: time.Duration(rng.Int64N(int64(timeline))), Kind: actRelabel, Group: -1, Arg: rng.IntN(len(s.Nodes)),
		})
	}
	// One SIGKILL + restart, somewhere in the middle of the load.
	s.Actions = append(s.Actions, action{
		At: timeline/4 + time.Duration(rng.Int64N(int64(timeline/2))), Kind: actKill, Group: -1,
	})
	slices.SortStableFunc(s.Actions, func(a, b action) int { return int(a.At - b.At) })
	return s
}

// describe is the scenario in a few lines, for the trace's header.
func (s *scenario) describe() string {
	out := fmt.Sprintf("seed %d (lendIdleRoom %v): %d nodes (%d cpu),", s.Seed, s.Lend, len(s.Nodes), s.clusterCPU())
	for _, n := range s.Nodes {
		out += fmt.Sprintf(" %d%v", n.CPU, n.Labels)
	}
	out += "\nqueues:"
	for _, q := range s.Queues {
		out += fmt.Sprintf(" %s(w%d cap%d gua%d recl%v parent%q)", q.Name, q.Weight, q.Capability, q.Guarantee, q.Reclaimable, q.Parent)
	}
	out += "\ngroups:"
	for _, g := range s.Groups {
		out += "\n  " + g.String()
	}
	return out
}

// drawLimit gives about three groups in four a run-time limit of
// minLimit-maxLimit s, declared the ways users write it, and a run time of
// 55-85% of it (at least 1.2 s short of it: overrunMargin). It draws the
// same four numbers for every group.
func (g *groupSpec) drawLimit(rng *rand.Rand) {
	bounded := rng.IntN(4) < 3
	limit := minLimit + rng.IntN(maxLimit-minLimit+1)
	frac := 0.55 + 0.3*rng.Float64()
	via := rng.IntN(8)
	if !bounded {
		return
	}
	g.Limit = limit
	g.Run = time.Duration(frac * float64(limit) * float64(time.Second)).Round(time.Millisecond)
	switch {
	case g.Singleton:
		g.LimitVia = []limitSource{limitPodAnnot, limitDeadline, limitDeadlineLoose}[via%3]
	case g.Annotated:
		// Its PodGroup is the scheduler's: the limit is on the pods.
		g.LimitVia = []limitSource{limitPodAnnot, limitPodAnnot, limitDeadline, limitDeadline, limitDeadlineLoose, limitDeadlineLoose, limitPartial, limitPodAnnot}[via]
	default:
		g.LimitVia = []limitSource{limitGroupAnnot, limitGroupAnnot, limitPodAnnot, limitDeadline, limitDeadlineLoose, limitPartial, limitGroupAnnot, limitPodAnnot}[via]
	}
	if g.LimitVia == limitPartial && g.Members == 1 {
		g.LimitVia = limitPodAnnot
	}
}

// memberLimit is member i's own limit in seconds, 0 for none.
func (g groupSpec) memberLimit(i int) int {
	if g.LimitVia == limitPartial && i == g.Members-1 {
		return 0
	}
	return g.Limit
}

// gangLimit is the limit the plan gives the group: its longest member's,
// none when a member has none.
func (g groupSpec) gangLimit() int {
	if g.LimitVia == limitPartial {
		return 0
	}
	return g.Limit
}

func (g groupSpec) String() string {
	lim := "none"
	if g.Limit > 0 {
		lim = fmt.Sprintf("%ds(%s) run=%v", g.Limit, g.LimitVia, g.Run)
	}
	return fmt.Sprintf("%s q=%s %d/%d x %dcpu prio=%d timeout=%ds sel=%v gated=%v annotated=%v limit=%s", g.Name, g.Queue, g.MinMember, g.Members, g.CPU, g.Priority, g.Timeout, g.Selector, g.Gated, g.Annotated, lim)
}
