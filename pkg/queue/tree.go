package queue

import (
	"fmt"
	"sort"
	"strings"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// RootName is the name of the implicit root queue. A Spec whose Parent is empty
// or RootName is a top-level queue; no Spec may be named RootName.
const RootName = "root"

// State is a queue's admission state.
type State string

// Queue states. The zero value "" means Open.
const (
	// StateOpen admits new groups.
	StateOpen State = "Open"
	// StateClosed admits no new groups; work already admitted or running continues.
	StateClosed State = "Closed"
)

// Weight bounds. A Spec's weight outside them is clamped (the CRD rejects such
// specs; the math tolerates them).
const (
	MinWeight = 1
	MaxWeight = 65535
)

// Spec is the part of a Queue object the policy reads.
type Spec struct {
	// Name is the queue's name; unique, not empty, not RootName.
	Name string
	// Parent names the parent queue; "" or RootName for a top-level queue.
	Parent string
	// Weight divides a parent's share among its children; clamped to
	// [MinWeight, MaxWeight], so the zero value counts as 1.
	Weight int32
	// Capability is the most the queue (with its descendants) may hold. A nil
	// list, or a resource absent from it, is unbounded.
	Capability resources.List
	// Guarantee is reserved for the queue: siblings' real capabilities leave it
	// free, and the queue's deserved share never falls below it while the queue
	// demands that much. A guarantee above the capability counts as the capability.
	Guarantee resources.List
	// Reclaimable says whether other queues may reclaim what this queue holds
	// above its deserved share. The fair-share math does not read it; it is
	// carried for the reclaim policy.
	Reclaimable bool
	// Priority orders queues in the admission pass: higher first.
	Priority int32
	// State is Open or Closed; "" means Open.
	State State
}

// Open reports whether the queue admits new groups: any state but StateClosed.
func (s Spec) Open() bool { return s.State != StateClosed }

// EffectiveWeight is Weight clamped to [MinWeight, MaxWeight].
func (s Spec) EffectiveWeight() int32 {
	return min(max(s.Weight, MinWeight), MaxWeight)
}

// TopLevel reports whether the queue hangs directly under the implicit root.
func (s Spec) TopLevel() bool { return s.Parent == "" || s.Parent == RootName }

// ProblemKind classifies what is wrong with a queue's place in the tree.
type ProblemKind string

// Problem kinds.
const (
	// ProblemInvalidName: the name is empty or RootName.
	ProblemInvalidName ProblemKind = "InvalidName"
	// ProblemDuplicate: two specs share the name.
	ProblemDuplicate ProblemKind = "DuplicateName"
	// ProblemParentMissing: the parent names no known queue.
	ProblemParentMissing ProblemKind = "ParentMissing"
	// ProblemCycle: following parents from the queue comes back to it.
	ProblemCycle ProblemKind = "ParentCycle"
	// ProblemAncestor: the queue itself is fine but an ancestor has a problem,
	// so the queue has no path to the root.
	ProblemAncestor ProblemKind = "AncestorProblem"
)

// Problem says why a queue cannot take part in the fair-share division.
// Admission refuses groups of such a queue with Message, and the status
// reconciler can set it as a condition.
type Problem struct {
	// Kind classifies the problem.
	Kind ProblemKind
	// Message says it for users, e.g. `parent queue "x" not found`.
	Message string
}

// Error returns Message, so a Problem can be used as an error.
func (p *Problem) Error() string { return p.Message }

// Tree is the queue hierarchy built from a flat list of specs. It is immutable
// and safe for concurrent reads. Queues with a Problem are kept (so callers can
// report the problem) but have no parent, no children and no share.
type Tree struct {
	specs    []Spec // by node index, in name order
	index    map[string]int
	parent   []int   // parent node; -1 for top-level and broken queues
	children [][]int // healthy children in name order
	top      []int   // healthy top-level queues in name order
	order    []int   // healthy queues, every parent before its children
	problems []*Problem
}

// BuildTree builds the hierarchy from specs, in any order, and records a
// Problem for every queue that cannot be placed: an invalid or duplicated name,
// a missing parent, a parent cycle (a queue that is its own parent is a cycle
// of length 1), or an ancestor with one of these problems. It runs in
// O(n log n) for n specs.
func BuildTree(specs []Spec) *Tree {
	t, dup := newTree(specs)
	declared := t.declareParents(dup)
	t.markBrokenPaths(declared)
	t.link(declared)
	return t
}

// newTree returns a Tree of specs sorted by name, the first of each name
// kept, and reports per kept spec whether its name was given more than once.
func newTree(specs []Spec) (*Tree, []bool) {
	sorted := make([]Spec, len(specs))
	copy(sorted, specs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	t := &Tree{index: make(map[string]int, len(sorted))}
	var dup []bool
	for _, s := range sorted {
		if i, ok := t.index[s.Name]; ok {
			dup[i] = true
			continue
		}
		t.index[s.Name] = len(t.specs)
		t.specs = append(t.specs, s)
		dup = append(dup, false)
	}
	n := len(t.specs)
	t.parent = make([]int, n)
	t.children = make([][]int, n)
	t.problems = make([]*Problem, n)
	return t, dup
}

// What a spec's Parent names, besides a node index (declareParents).
const (
	declaredRoot    = -1 // the implicit root
	declaredMissing = -2 // no known queue
)

// declareParents records the problems of each queue's own spec (an invalid
// or duplicated name, a parent that does not exist) and returns the node
// each spec names as its parent: a node index, declaredRoot or
// declaredMissing.
func (t *Tree) declareParents(dup []bool) []int {
	declared := make([]int, len(t.specs))
	for i, s := range t.specs {
		switch {
		case s.Name == "":
			t.problems[i] = &Problem{ProblemInvalidName, "queue name is empty"}
		case s.Name == RootName:
			t.problems[i] = &Problem{ProblemInvalidName, fmt.Sprintf("queue name %q is reserved for the implicit root", RootName)}
		case dup[i]:
			t.problems[i] = &Problem{ProblemDuplicate, fmt.Sprintf("queue %q is defined more than once", s.Name)}
		}
		switch p, ok := t.index[s.Parent]; {
		case s.TopLevel():
			declared[i] = declaredRoot
		case ok:
			declared[i] = p
		default:
			declared[i] = declaredMissing
			if t.problems[i] == nil {
				t.problems[i] = &Problem{ProblemParentMissing, fmt.Sprintf("parent queue %q not found", s.Parent)}
			}
		}
	}
	return declared
}

// Where markBrokenPaths is with a queue.
const (
	walkUnvisited uint8 = iota
	walkOnPath          // on the path being walked up
	walkGood            // has a path to the root
	walkBad             // has a problem of its own or an ancestor's
)

// pathWalk is the scratch space of markBrokenPaths.
type pathWalk struct {
	t        *Tree
	declared []int
	state    []uint8
	cause    []int // for a walkBad queue: the queue whose own problem it inherits
	pos      []int // position on the current path
	path     []int
}

// markBrokenPaths gives every queue without a path to the root a problem: a
// cycle of parents (ProblemCycle), or an ancestor with a problem
// (ProblemAncestor). It walks up from every queue not yet resolved; every
// queue is walked over once, so this is O(n).
func (t *Tree) markBrokenPaths(declared []int) {
	n := len(t.specs)
	w := pathWalk{t: t, declared: declared, state: make([]uint8, n), cause: make([]int, n), pos: make([]int, n)}
	for i := range n {
		if w.state[i] != walkUnvisited {
			continue
		}
		w.path = w.path[:0]
		broken, root := w.climb(i)
		for _, k := range w.path {
			if broken {
				w.state[k], w.cause[k] = walkBad, root
				t.problems[k] = &Problem{ProblemAncestor, fmt.Sprintf("ancestor queue %q is unusable: %s", t.specs[root].Name, t.problems[root].Message)}
			} else {
				w.state[k] = walkGood
			}
		}
	}
}

// climb walks up from queue i, putting unresolved queues on w.path, until a
// resolved queue, the root, a queue with a problem of its own, or a queue
// already on the path: a cycle, whose queues get ProblemCycle and leave the
// path. It reports whether the path leads to a queue with a problem, and to
// which one.
func (w *pathWalk) climb(i int) (broken bool, root int) {
	t := w.t
	cur := i
	for {
		switch {
		case w.state[cur] == walkGood:
			return false, -1
		case w.state[cur] == walkBad:
			return true, w.cause[cur]
		case w.state[cur] == walkOnPath:
			cycle := w.path[w.pos[cur]:]
			for j, c := range cycle {
				t.problems[c] = &Problem{ProblemCycle, cycleMessage(t.specs, cycle, j)}
				w.state[c], w.cause[c] = walkBad, c
			}
			w.path = w.path[:w.pos[cur]]
			return true, cur
		case t.problems[cur] != nil:
			w.state[cur], w.cause[cur] = walkBad, cur
			return true, cur
		case w.declared[cur] == declaredRoot:
			w.state[cur] = walkGood
			return false, -1
		}
		w.state[cur], w.pos[cur] = walkOnPath, len(w.path)
		w.path = append(w.path, cur)
		cur = w.declared[cur]
	}
}

// link connects the healthy queues to their parents and children, and
// orders them parents first (t.order).
func (t *Tree) link(declared []int) {
	n := len(t.specs)
	for i := range n {
		t.parent[i] = -1
		if t.problems[i] != nil {
			continue
		}
		if p := declared[i]; p >= 0 {
			t.parent[i] = p
			t.children[p] = append(t.children[p], i) // i ascends, so children stay in name order
		} else {
			t.top = append(t.top, i)
		}
	}
	t.order = make([]int, 0, n)
	for _, i := range t.top {
		t.appendSubtree(i)
	}
}

// appendSubtree appends i and its descendants to t.order, depth first.
func (t *Tree) appendSubtree(i int) {
	t.order = append(t.order, i)
	for _, c := range t.children[i] {
		t.appendSubtree(c)
	}
}

// cycleMessage renders the cycle as seen from cycle[start]:
// "parent cycle: a -> b -> a", where an arrow leads from a queue to its parent.
func cycleMessage(specs []Spec, cycle []int, start int) string {
	var b strings.Builder
	b.WriteString("parent cycle: ")
	for k := 0; k <= len(cycle); k++ {
		if k > 0 {
			b.WriteString(" -> ")
		}
		b.WriteString(specs[cycle[(start+k)%len(cycle)]].Name)
	}
	return b.String()
}

// Len returns the number of distinct queue names, broken queues included.
func (t *Tree) Len() int { return len(t.specs) }

// Names returns every queue name in order, broken queues included.
func (t *Tree) Names() []string {
	out := make([]string, len(t.specs))
	for i, s := range t.specs {
		out[i] = s.Name
	}
	return out
}

// Spec returns the spec of the named queue. With duplicated names it is the
// first one given.
func (t *Tree) Spec(name string) (Spec, bool) {
	i, ok := t.index[name]
	if !ok {
		return Spec{}, false
	}
	return t.specs[i], true
}

// Problem returns what keeps the named queue out of the tree, or nil when the
// queue is healthy or unknown.
func (t *Tree) Problem(name string) *Problem {
	if i, ok := t.index[name]; ok {
		return t.problems[i]
	}
	return nil
}

// Problems returns every broken queue's problem, by queue name.
func (t *Tree) Problems() map[string]*Problem {
	out := map[string]*Problem{}
	for i, p := range t.problems {
		if p != nil {
			out[t.specs[i].Name] = p
		}
	}
	return out
}

// Healthy reports whether the named queue exists and has a path to the root.
func (t *Tree) Healthy(name string) bool {
	i, ok := t.index[name]
	return ok && t.problems[i] == nil
}

// Children returns the healthy children of the named queue in name order; of
// the implicit root for "" or RootName.
func (t *Tree) Children(name string) []string {
	kids := t.top
	if name != "" && name != RootName {
		i, ok := t.index[name]
		if !ok {
			return nil
		}
		kids = t.children[i]
	}
	out := make([]string, len(kids))
	for k, c := range kids {
		out[k] = t.specs[c].Name
	}
	return out
}

// Ancestors returns the parent, grandparent, ... of a healthy queue, nearest
// first, without the implicit root; nil for a top-level, broken or unknown queue.
func (t *Tree) Ancestors(name string) []string {
	i, ok := t.index[name]
	if !ok {
		return nil
	}
	var out []string
	for p := t.parent[i]; p >= 0; p = t.parent[p] {
		out = append(out, t.specs[p].Name)
	}
	return out
}
