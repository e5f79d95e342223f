package reclaim

import (
	"fmt"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// withinDeserved says why the queue may not reclaim need, or "".
func withinDeserved(q Queue, need resources.List) string {
	for _, k := range sortedNames(need) {
		v := need[k]
		if v <= 0 {
			continue
		}
		if q.Allocated[k]+v > q.Deserved[k] {
			return fmt.Sprintf("would exceed its deserved %s (%s allocated + %s requested > %s)", k,
				resources.Format(k, q.Allocated[k]), resources.Format(k, v), resources.Format(k, q.Deserved[k]))
		}
	}
	return ""
}

// affordable applies the reclaim rule to taking pods on top of what is taken:
// each pod's queue must stay at or above its deserved share on some resource
// the pod frees, and at or above its guarantee on every resource.
func (s *state) affordable(pods []int) bool {
	if s.mode != Reclaim {
		return true
	}
	after := map[string]resources.List{}
	for _, i := range pods {
		p := s.in.Pods[i]
		if after[p.Queue] == nil {
			after[p.Queue] = resources.List{}.Add(s.takenQ[p.Queue])
		}
		after[p.Queue].Add(p.Request)
	}
	for _, i := range pods {
		p := s.in.Pods[i]
		q := s.in.Queues[p.Queue]
		t := after[p.Queue]
		over := false
		for k, v := range p.Request {
			// A resource the queue has no deserved amount of is one it
			// was never given a share of: it is not over on it.
			if d, ok := q.Deserved[k]; ok && v > 0 && q.Allocated[k]-t[k] >= d {
				over = true
				break
			}
		}
		if !over {
			return false
		}
		for k, g := range q.Guarantee {
			if g > 0 && q.Allocated[k]-t[k] < g {
				return false
			}
		}
	}
	return true
}
