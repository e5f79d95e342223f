package reclaim

// Disruption budgets: each victim spends one disruption of every budget
// covering it (Pod.Budgets), as upstream's filterPodsWithPDBViolation counts.

// violations counts the pods that would break a disruption budget if pods
// were taken on top of what is taken: a Disruptive pod always does, another
// when one of its budgets has no disruption left for it.
func (s *state) violations(pods []int) int {
	n := 0
	var extra map[int]int32 // budget -> spent by pods before this one
	for _, i := range pods {
		p := &s.in.Pods[i]
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
func (s *state) spend(p *Pod, d int32) {
	for _, b := range p.Budgets {
		if b >= 0 && b < len(s.spent) {
			s.spent[b] += d
		}
	}
}
