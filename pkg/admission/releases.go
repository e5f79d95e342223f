package admission

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/noderoom"
	"github.com/caldera-sched/caldera/pkg/plan"
)

// releases keeps pkg/plan's release timeline from pass to pass: sorting
// 50,000 pods' ends again in every pass that plans was most of its cost.
// Pod events mark what changed (dirty, O(1)); the next pass that plans
// applies just that, and lays the timeline out again only when the pass's
// nodes or resources changed.
type releases struct {
	tl *plan.Timeline
	// nodeGen and resourceGen are the layout tl was built on.
	nodeGen, resourceGen uint64
	// held is what tl holds per pod, to take it out again.
	held map[types.UID]plan.Alloc
	// changed are the pods whose end came, went or moved since.
	changed map[types.UID]struct{}
}

// dirty marks pod uid's end as changed. O(1).
func (r *releases) dirty(uid types.UID) {
	if r.tl == nil {
		return // the next timeline is built from every end anyway
	}
	if r.changed == nil {
		r.changed = map[types.UID]struct{}{}
	}
	r.changed[uid] = struct{}{}
}

// timeline returns the timeline of ends laid out on pass p: rebuilt when
// p's layout changed, else with the changed pods applied. The free room
// now is the caller's to set (SetFree).
func (r *releases) timeline(p *passPlacement, ends map[types.UID]podEnd) *plan.Timeline {
	if r.tl == nil || r.nodeGen != p.NodeGen || r.resourceGen != p.ResourceGen {
		r.rebuild(p, ends)
		return r.tl
	}
	for uid := range r.changed {
		if old, ok := r.held[uid]; ok {
			r.tl.Remove(old)
			delete(r.held, uid)
		}
		if e, ok := ends[uid]; ok {
			if a, ok := allocOf(&p.Pass, e); ok {
				r.tl.Add(a)
				r.held[uid] = a
			}
		}
	}
	clear(r.changed)
	return r.tl
}

func (r *releases) rebuild(p *passPlacement, ends map[types.UID]podEnd) {
	r.nodeGen, r.resourceGen = p.NodeGen, p.ResourceGen
	r.held = make(map[types.UID]plan.Alloc, len(ends))
	allocs := make([]plan.Alloc, 0, len(ends))
	for uid, e := range ends {
		if a, ok := allocOf(&p.Pass, e); ok {
			allocs = append(allocs, a)
			r.held[uid] = a
		}
	}
	r.tl = plan.NewTimeline(p.Free.R, make([]int64, len(p.Names)*p.Free.R), allocs)
	clear(r.changed)
}

// allocOf is e on p's layout; false when its node is not in it.
func allocOf(p *noderoom.Pass, e podEnd) (plan.Alloc, bool) {
	i, ok := p.Index[e.Node]
	if !ok {
		return plan.Alloc{}, false
	}
	req := make([]int64, len(p.Resources))
	for k, v := range e.req {
		if j, ok := p.ResourceIndex[k]; ok {
			req[j] = v
		}
	}
	return plan.Alloc{Node: int32(i), Request: req, End: e.end}, true
}
