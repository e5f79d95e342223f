package admission

import (
	"slices"

	"github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// pinned is where an admission put a unit's members.
type pinned struct {
	// resources is the resource order of the requests (a later pass may
	// see more resources; the pins are then ignored).
	resources []string
	steps     []pin
}

// pin is one member's node and request.
type pin struct {
	node string
	req  []int64
}

// admittedSteps are the classes and steps Commit applies for g: those the
// backfill check chose, which the plan took, when g went through it, else
// the placement check's.
func (pp *passPlacement) admittedSteps(g queue.Group, classes []placement.Class) ([]placement.Class, []placement.Step) {
	tp := &pp.Tp
	if tp.jobKey == g.Key && len(tp.jobSteps) == len(pp.lastSteps) {
		return tp.job.Classes, tp.jobSteps
	}
	return classes, pp.lastSteps
}

// pin records steps as key's pins. O(steps).
func (pp *passPlacement) pin(key queue.Key, classes []placement.Class, steps []placement.Step) {
	f := pp.feas
	if len(steps) == 0 {
		delete(f.pins, key)
		return
	}
	if f.pins == nil {
		f.pins = map[queue.Key]*pinned{}
	}
	p := f.pins[key]
	if p == nil {
		p = &pinned{}
		f.pins[key] = p
	}
	p.resources = append(p.resources[:0], pp.Resources...)
	p.steps = p.steps[:0]
	reqs := make([][]int64, len(classes)) // the classes' requests are the pass's scratch
	for _, s := range steps {
		if reqs[s.Class] == nil {
			reqs[s.Class] = slices.Clone(classes[s.Class].Request)
		}
		p.steps = append(p.steps, pin{node: pp.Names[s.Node], req: reqs[s.Class]})
	}
}

// placePinned places what it can of classes on key's pins, in the working
// room, lowering the classes' counts by what it placed; the steps are
// appended to dst. A pin is used once, and only where its member's request
// matches and still fits. O(classes x pins).
func (pp *passPlacement) placePinned(dst []placement.Step, key queue.Key, classes []placement.Class) []placement.Step {
	p := pp.feas.pins[key]
	if p == nil || !slices.Equal(p.resources, pp.Resources) {
		return dst
	}
	r := pp.Free.R
	used := make([]bool, len(p.steps))
	for ci := range classes {
		c := &classes[ci]
		for k, s := range p.steps {
			if c.Count == 0 {
				break
			}
			i, ok := pp.Index[s.node]
			if used[k] || !ok || !slices.Equal(s.req, c.Request) {
				continue
			}
			row := pp.Free.Free[i*r : (i+1)*r]
			if (pp.Free.Blocked != nil && pp.Free.Blocked[i]) || placement.Fits(c.Request, row) < 1 {
				continue
			}
			used[k] = true
			for j, v := range c.Request {
				row[j] -= v
			}
			c.Count--
			dst = append(dst, placement.Step{Class: int32(ci), Node: int32(i)})
		}
	}
	return dst
}
