package gang

import (
	"context"
	"sync"
	"testing"
	"time"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
	policy "github.com/caldera-sched/caldera/pkg/gang"
)

// TestSchedulingCycleStorm runs scheduling cycles of many gangs through the
// plugin at once, as kube-scheduler's binding goroutines and its scheduling
// loop do (Reserve and Permit on one goroutine per gang, Unreserve of every
// member of a gang that gives up, PreEnqueue and PreFilter from readers), and
// checks what the cache holds afterwards: every gang that completed Permit
// has all its members placed, every gang that gave up holds nothing. Run it
// with -race.
func TestSchedulingCycleStorm(t *testing.T) {
	const (
		gangs   = 64
		size    = 4
		readers = 2
	)
	pgs, pods := cachetest.Gangs("storm", gangs, size)
	c := cachetest.NewForTest(t, pgs, pods)
	g := &Gang{cache: c, plans: c.Evictions(), backoff: policy.Backoff{}, permitTimeout: time.Minute}
	ctx := context.Background()

	done := make(chan struct{})
	var readersWG, cyclesWG sync.WaitGroup
	for r := range readers {
		readersWG.Go(func() {
			for i := r; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				p := pods[i%len(pods)]
				g.PreEnqueue(ctx, p)
				g.PreFilter(ctx, nil, p, nil)
				c.SortInfo(p)
			}
		})
	}
	allowed := make([]int, gangs)
	for k := range gangs {
		cyclesWG.Go(func() {
			members := pods[k*size : (k+1)*size]
			// Odd gangs give up after two members, as after a Permit timeout.
			n := size
			if k%2 == 1 {
				n = 2
			}
			for _, p := range members[:n] {
				if st := g.PreEnqueue(ctx, p); !st.IsSuccess() {
					t.Errorf("PreEnqueue(%s) = %v, want success", p.Name, st)
				}
				g.Reserve(ctx, nil, p, "n1")
				st, _ := g.Permit(ctx, nil, p, "n1")
				switch st.Code() {
				case fwk.Success:
					allowed[k]++
				case fwk.Wait:
				default:
					t.Errorf("Permit(%s) = %v", p.Name, st)
				}
			}
			if n < size {
				for _, p := range members[:n] {
					g.Unreserve(ctx, nil, p, "n1")
				}
			}
		})
	}
	cyclesWG.Wait()
	close(done)
	readersWG.Wait()

	placed := placedByGroup(t, c)
	for k, pg := range pgs {
		wantPlaced, wantAllowed := size, 1
		if k%2 == 1 {
			wantPlaced, wantAllowed = 0, 0
		}
		key := pg.Namespace + "/" + pg.Name
		if placed[key] != wantPlaced || allowed[k] != wantAllowed {
			t.Errorf("gang %s: %d members placed and %d allowed by Permit, want %d and %d", key, placed[key], allowed[k], wantPlaced, wantAllowed)
		}
	}
}

// placedByGroup reads each group's placed count from the cache dump.
func placedByGroup(t *testing.T, c *cache.Cache) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, g := range cachetest.DumpedGroups(t, c) {
		out[g.Key] = g.Counts["placed"]
	}
	return out
}
