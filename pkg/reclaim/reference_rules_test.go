package reclaim_test

// The decision rules of the reference oracle (see reference_test.go),
// copied verbatim from order.go, deficit.go, budget.go and share.go.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	. "github.com/caldera-sched/caldera/pkg/reclaim"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// cheaper: victims a are a better choice than b: fewer disruption budget
// violations, fewer pods, then a lower highest priority, then younger
// (their longest-running pod started later).
func cheaper(a, b []option) bool {
	na, da, pa, sa := summarize(a)
	nb, db, pb, sb := summarize(b)
	if da != db {
		return da < db
	}
	if na != nb {
		return na < nb
	}
	if pa != pb {
		return pa < pb
	}
	return sa.After(sb)
}

// summarize returns the pod count, disruption budget violations, highest
// priority and earliest start of a set of options.
func summarize(opts []option) (n, disruptive int, prio int32, earliest time.Time) {
	prio = math.MinInt32
	for i, o := range opts {
		n += len(o.pods)
		disruptive += o.disruptive
		prio = max(prio, o.priority)
		if i == 0 || o.earliest.Before(earliest) {
			earliest = o.earliest
		}
	}
	return n, disruptive, prio, earliest
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// compareRequests orders requests by cpu, then memory, then the rest by name.
func compareRequests(a, b resources.List) int {
	if c := cmp.Compare(a[resources.CPU], b[resources.CPU]); c != 0 {
		return c
	}
	if c := cmp.Compare(a["memory"], b["memory"]); c != 0 {
		return c
	}
	for _, k := range sortedNames(a, b) {
		if c := cmp.Compare(a[k], b[k]); c != 0 {
			return c
		}
	}
	return 0
}

func sortedNames(ls ...resources.List) []string {
	var out []string
	for _, l := range ls {
		for k := range l {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// inDeficit: pod p is in the subtree of some deficit, so evicting it helps
// whichever node it is on.
func (s *state) inDeficit(p Pod) bool {
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
		p := s.in.Pods[i]
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

// violations counts the pods that would break a disruption budget if pods
// were taken on top of what is taken: a Disruptive pod always does, another
// when one of its budgets has no disruption left for it.
func (s *state) violations(pods []int) int {
	n := 0
	var extra map[int]int32 // budget -> spent by pods before this one
	for _, i := range pods {
		p := s.in.Pods[i]
		violates := p.Disruptive
		for _, b := range p.Budgets {
			if b < 0 || b >= len(s.in.Budgets) {
				continue
			}
			if extra == nil {
				extra = map[int]int32{}
			}
			extra[b]++
			if s.in.Budgets[b]-s.spent[b]-extra[b] < 0 {
				violates = true
			}
		}
		n += b2i(violates)
	}
	return n
}

// spend adds d to the disruptions p's budgets have spent.
func (s *state) spend(p Pod, d int32) {
	for _, b := range p.Budgets {
		if b >= 0 && b < len(s.spent) {
			s.spent[b] += d
		}
	}
}

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
