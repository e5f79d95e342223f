package cache

import (
	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// countLocked adds member m's state to g's aggregates (delta +1) or takes
// it out (delta -1), and a, the admission side (off: none), learns when
// g's demand changed. Callers take a member out before they change it and
// add it back after.
func countLocked(g *gangbook.Group, m *gangbook.Member, delta int, a *admission.State) {
	if g.Count(m, delta) {
		a.DemandChangedLocked(g.Key)
	}
}
