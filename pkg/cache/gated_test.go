package cache

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The test in this file checks liveness against kube-scheduler's queue: a
// pod that PreEnqueue refused waits until something activates it, and the
// queue and this cache get pods from two handlers of the same informer,
// which run in any interleaving. Whatever that interleaving, and whenever
// the PodGroup arrives and admission passes run, no pending member of an
// admitted gang may be left waiting.

// gatedQueue models the part of kube-scheduler's scheduling queue that
// matters here: Add runs the PreEnqueue gates (CalderaGang's and
// CalderaEnqueue's) and keeps a refused pod aside; Activate runs them again
// on the pods it names that are aside.
type gatedQueue struct {
	c       *Cache
	h       *fakeHandle
	gated   map[string]*v1.Pod
	entered map[string]bool
}

func (q *gatedQueue) preEnqueue(p *v1.Pod) bool {
	_, ok, _ := q.c.Enqueueable(p)
	if !ok {
		return false
	}
	ok, _ = q.c.Admitted(p)
	return ok
}

func (q *gatedQueue) add(p *v1.Pod) {
	key := p.Namespace + "/" + p.Name
	if q.preEnqueue(p) {
		q.entered[key] = true
		return
	}
	q.gated[key] = p
}

// drain delivers the Activate calls the cache made.
func (q *gatedQueue) drain() {
	for _, call := range q.h.activations() {
		for _, key := range call {
			if p := q.gated[key]; p != nil && q.preEnqueue(p) {
				delete(q.gated, key)
				q.entered[key] = true
			}
		}
	}
}

// interleavings returns every merge of n queue steps ('q') and n cache steps
// ('c') that keeps each side's order.
func interleavings(n int) []string {
	var out []string
	var walk func(prefix string, qs, cs int)
	walk = func(prefix string, qs, cs int) {
		if qs == n && cs == n {
			out = append(out, prefix)
			return
		}
		if qs < n {
			walk(prefix+"q", qs+1, cs)
		}
		if cs < n {
			walk(prefix+"c", qs, cs+1)
		}
	}
	walk("", 0, 0)
	return out
}

func TestNoPendingMemberLeftGated(t *testing.T) {
	// A Spark-style gang, minMember 3 of 4 pods, so a member may arrive
	// after the gang is complete; and a singleton, also admitted by queue.
	const size = 5
	pods := make([]*v1.Pod, size)
	for i := range pods {
		pods[i] = memberOf("ns", fmt.Sprint("p", i), "g", cpu("1"))
	}
	pods[2] = single("ns", "solo", inQueue("q0"), cpu("1"))
	pg := mkPG("ns", "g", 3, pgQueue("q0"))
	for _, order := range interleavings(size) {
		for pgAt := 0; pgAt <= 2*size; pgAt++ {
			for _, passEveryStep := range []bool{false, true} {
				name := fmt.Sprintf("%s/pg@%d/pass-every-step=%v", order, pgAt, passEveryStep)
				c, h, _ := newAdmissionCache(t, singletons, mkQueue("q0"))
				c.ApplyNode(logger, mkNode("n1", "64"))
				q := &gatedQueue{c: c, h: h, gated: map[string]*v1.Pod{}, entered: map[string]bool{}}
				now := t0
				qi, ci := 0, 0
				for step := 0; step <= len(order); step++ {
					if step == pgAt {
						addPG(c, pg)
					}
					if step < len(order) {
						if order[step] == 'q' {
							q.add(pods[qi])
							qi++
						} else {
							podEvent(c, pods[ci])
							ci++
						}
					}
					if passEveryStep {
						now = now.Add(time.Second)
						pass(c, now)
					}
					q.drain()
				}
				pass(c, now.Add(time.Second))
				q.drain()
				if len(q.entered) != size {
					left := slices.Sorted(maps.Keys(q.gated))
					t.Fatalf("%s: %d of %d pods entered the queue; left refused by PreEnqueue with nothing to activate them: %s",
						name, len(q.entered), size, strings.Join(left, ", "))
				}
			}
		}
	}
}
