package cache

import (
	"time"

	"github.com/caldera-sched/caldera/pkg/queue"
)

// Admitted gangs short of members. A gang is admitted when it has its
// minMember members; one that loses them before it starts cannot start,
// and its admission would keep its queue's room for nothing.

// shortGrace is how long an admitted gang that has not started may have
// fewer than minMember members Caldera can place before it goes back to
// pending: long enough for a controller to replace a deleted pod (or for a
// relist's delete + add), short next to how long its admission would
// otherwise keep its queue's room from work that can start.
const shortGrace = 5 * time.Second

// unadmitShortLocked tracks whether an admitted gang that has not started
// is short of members (deleted, gated, or minMember raised): such a gang
// cannot start. The admission pass returns it to pending once it has been
// short for shortGrace (returnShortLocked). Before the scheduler's pod
// informer has delivered its first list the members may simply not have
// arrived (a gang admitted by an earlier process is installed from its
// annotation first), so nothing is tracked then; membersListed checks every
// gang once they have. O(1).
func (c *Cache) unadmitShortLocked(g *group, u *unit) {
	if u == nil || !u.admitted || u.started || u.min <= 0 || u.members >= u.min || !c.membersSynced.fired() {
		if u != nil {
			delete(c.short, u.key)
		}
		return
	}
	if _, ok := c.short[u.key]; !ok {
		if c.short == nil {
			c.short = map[queue.Key]time.Time{}
		}
		c.short[u.key] = time.Time{} // the next pass starts the clock
	}
}

// returnShortLocked returns to pending the admitted gangs short of members
// for shortGrace at now; the first pass to see one short starts its clock.
// O(short gangs).
func (c *Cache) returnShortLocked(now time.Time) {
	for key, since := range c.short {
		u := c.adm.units[key]
		switch {
		case u == nil || u.gang == nil || !u.admitted || u.started || u.members >= u.min:
			delete(c.short, key)
		case since.IsZero():
			c.short[key] = now
		case now.Sub(since) >= shortGrace:
			delete(c.short, key)
			c.unadmitLocked(u.gang)
		}
	}
}
