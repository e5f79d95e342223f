package admission

import (
	"time"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// Admitted gangs short of members. A gang is admitted when it has its
// minMember members; one that loses them before it starts cannot start,
// and its admission would keep its queue's room for nothing.

// ShortGrace is how long an admitted gang that has not started may have
// fewer than minMember members Caldera can place before it goes back to
// pending: long enough for a controller to replace a deleted pod (or for a
// relist's delete + add), short next to how long its admission would
// otherwise keep its queue's room from work that can start.
const ShortGrace = 5 * time.Second

// shortGangs holds the admitted gangs short of members, with when an
// admission pass first saw each short (zero: the next pass starts the
// clock).
type shortGangs map[queue.Key]time.Time

// Track tracks whether u, an admitted gang's unit that has not started, is
// short of members (deleted, gated, or minMember raised): such a gang
// cannot start. The admission pass returns it to pending once it has been
// short for ShortGrace (due). Before the scheduler's pod informer has
// delivered its first list (synced false) the members may simply not have
// arrived (a gang admitted by an earlier process is installed from its
// annotation first), so nothing is tracked then; membersListed checks every
// gang once they have. O(1).
func (s *shortGangs) Track(u *Unit, synced bool) {
	if u == nil || !u.Admitted || u.Started || u.Min <= 0 || u.Members >= u.Min || !synced {
		if u != nil {
			delete(*s, u.Key)
		}
		return
	}
	if _, ok := (*s)[u.Key]; !ok {
		if *s == nil {
			*s = shortGangs{}
		}
		(*s)[u.Key] = time.Time{} // the next pass starts the clock
	}
}

// due returns the admitted gangs short of members for ShortGrace at now,
// which go back to pending, and stops tracking them; the first pass to see
// one short starts its clock. units are the admission units by key.
// O(short gangs).
func (s shortGangs) due(now time.Time, units map[queue.Key]*Unit) []*gangbook.Group {
	var out []*gangbook.Group
	for key, since := range s {
		u := units[key]
		switch {
		case u == nil || u.Gang == nil || !u.Admitted || u.Started || u.Members >= u.Min:
			delete(s, key)
		case since.IsZero():
			s[key] = now
		case now.Sub(since) >= ShortGrace:
			delete(s, key)
			out = append(out, u.Gang)
		}
	}
	return out
}
