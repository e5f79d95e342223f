package reclaim

import "github.com/caldera-sched/caldera/pkg/resources"

// Deficit is room that must leave a set of queues before the preemptor may
// be placed, whatever the nodes have free: its queue, or an ancestor, would
// be over its capability. A plan's victims in Queues count towards it.
type Deficit struct {
	// Queues are the queues where a victim counts: the limited queue and
	// its descendants.
	Queues map[string]bool
	// Over is the amount to free, per resource.
	Over resources.List
}

// inDeficit: pod p is in the subtree of some deficit, so evicting it helps
// whichever node it is on.
func (s *state) inDeficit(p *Pod) bool {
	for _, d := range s.in.Deficits {
		if d.Queues[p.Queue] {
			return true
		}
	}
	return false
}

// covered: the taken victims free every deficit.
func (s *state) covered() bool {
	for _, d := range s.in.Deficits {
		if !s.coveredOne(d) {
			return false
		}
	}
	return true
}

func (s *state) coveredOne(d Deficit) bool {
	for k, need := range d.Over {
		var freed int64
		for q := range d.Queues {
			freed += s.takenQ[q][k]
		}
		if freed < need {
			return false
		}
	}
	return true
}

// helps: taking o frees some resource deficit d still lacks.
func (s *state) helps(o option, d Deficit) bool {
	for _, i := range o.pods {
		p := &s.in.Pods[i]
		if s.taken[i] || !d.Queues[p.Queue] {
			continue
		}
		for k, need := range d.Over {
			var freed int64
			for q := range d.Queues {
				freed += s.takenQ[q][k]
			}
			if freed < need && p.Request[k] > 0 {
				return true
			}
		}
	}
	return false
}

// cover takes options, best first, until every deficit is freed; false
// when the eligible victims cannot free one. Options that would break a
// disruption budget go last, as in makeRoom.
func (s *state) cover() bool {
	for _, d := range s.in.Deficits {
		for pass := 0; pass < 2 && !s.coveredOne(d); pass++ {
			for _, o := range s.opts {
				if s.coveredOne(d) {
					break
				}
				if pass == 0 && s.violations(o.pods) > 0 {
					continue
				}
				if s.helps(o, d) {
					s.take(o)
				}
			}
		}
		if !s.coveredOne(d) {
			return false
		}
	}
	return true
}
