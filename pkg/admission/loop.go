// Package admission owns Caldera's queue admission, Volcano's enqueue
// action: its State (queues, admission units, pod accounts and queue usage,
// extras and deficits, the pass's placement check, the plan over time with
// its reservations and estimates, evictions in flight) and the Loop that
// runs its passes. Which groups a queue admits is pure policy in pkg/queue;
// the State applies it under the cache's lock, which the cache takes before
// it calls the methods named Locked. The command starts one Loop per
// scheduler, so neither the cache nor the State runs a goroutine.
package admission

import (
	"context"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Debounce gathers the events of a burst (a Job creating its pods) into one
// pass: a kick waits this long before the pass runs.
const Debounce = 20 * time.Millisecond

// Passer runs one admission pass at now. *cache.Cache is one.
type Passer interface {
	AdmissionPass(logger klog.Logger, now time.Time)
}

// Loop runs a Passer's passes: after every kick (debounced) and every Period
// without one.
type Loop struct {
	// Pass is what a pass runs.
	Pass Passer
	// Period bounds the time between passes when nothing kicks.
	Period time.Duration
	// Kicks delivers a value whenever an event may change a decision; the
	// sender does not block (a buffer of one holds a pending kick).
	Kicks <-chan struct{}
	// Ready is what must have happened before the first pass: a pass before
	// the scheduler's informers have listed nodes and pods would see an
	// empty cluster and refuse everything.
	Ready []cache.DoneChecker
}

// Run runs passes until ctx ends. It returns at once when ctx ends before
// every Ready checker is done.
func (l Loop) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if !cache.WaitFor(ctx, "", l.Ready...) {
		return
	}
	tick := time.NewTicker(l.Period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.Kicks:
			select {
			case <-ctx.Done():
				return
			case <-time.After(Debounce):
			}
		case <-tick.C:
		}
		l.Pass.AdmissionPass(logger, time.Now())
	}
}
