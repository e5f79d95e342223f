package random_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Liveness at quiescence: once the generator has stopped, whatever a correct
// scheduler can start must start.

const (
	// fitBound: a pending group whose next members fit the free room binds
	// within this (the 20 s). The gang backoff as shipped doubles
	// from 1 s; a gang that failed often during the load may wait longer,
	// which this bound deliberately calls a defect: room appearing is an
	// event the scheduler reacts to.
	fitBound = 20 * time.Second
	// planBound: a group feasible only through an eviction plan (preemption
	// in its queue or reclaim of other queues' excess) starts within this.
	planBound = 30 * time.Second
	// quiesceMax caps the phase: both bounds plus room for a last plan.
	quiesceMax = planBound + 15*time.Second
	// startupGrace: the clocks start no earlier than this after the last
	// scheduler start became ready (caches sync, the first admission pass).
	startupGrace = 5 * time.Second
)

// quiesce runs the liveness checks until nothing feasible is pending (the
// cluster settled), a bound is broken, or quiesceMax passed. The clocks
// restart with every new binding in the namespace: progress of any kind
// answers "the scheduler is stuck" (the invariant is about being stuck, not
// about order).
func (r *run) quiesce(ctx context.Context, t *testing.T, w *watcher) {
	start := time.Now()
	r.trace.logf("quiescence: the generator stopped")
	firstFit := map[string]time.Time{}
	firstPlan := map[string]time.Time{}
	firstLend := map[string]time.Time{}
	settled := 0
	for time.Since(start) < quiesceMax && ctx.Err() == nil {
		s, err := w.snapshot(ctx)
		if err != nil {
			r.trace.logf("  quiesce: %v", err)
			sleepCtx(ctx, 500*time.Millisecond)
			continue
		}
		views := s.queueViews()
		now := time.Now()
		clock := maxTime(start, r.lastReady().Add(startupGrace), w.lastBinding())
		// A group that fits the free room may be held back by a
		// reservation it would delay (docs/backfill.md): fitting and
		// lending are owed only once no reservation can exist. Eviction
		// plans are not held to reservations.
		fitClock := maxTime(clock, w.lastReserving().Add(causeLag))
		var names []string
		for n := range s.Groups {
			names = append(names, n)
		}
		sort.Strings(names)
		fits, plans := map[string]bool{}, map[string]string{}
		for _, n := range names {
			g := s.Groups[n]
			if fitsFree(s, views, g) {
				fits[n] = true
				continue
			}
			if p := preemptionPlan(s, views, g); p != "" {
				plans[n] = "preemption: " + p
			} else if p := reclaimPlan(s, views, g); p != "" {
				plans[n] = "reclaim: " + p
			}
		}
		// Loans: only when no group is entitled to room (fits or a plan
		// would serve it first, and the scheduler lends nothing while one
		// within its share waits).
		lends := map[string]bool{}
		if r.sc.Lend && len(fits) == 0 && len(plans) == 0 && !entitledWaiting(s, views) {
			for _, n := range names {
				if lendable(s, views, s.Groups[n]) {
					lends[n] = true
				}
			}
		}
		for n := range firstLend {
			if !lends[n] {
				delete(firstLend, n)
			}
		}
		broken := false
		for n := range firstFit {
			if !fits[n] {
				delete(firstFit, n)
			}
		}
		for n := range firstPlan {
			if _, ok := plans[n]; !ok {
				delete(firstPlan, n)
			}
		}
		for _, n := range names {
			if fits[n] {
				if _, ok := firstFit[n]; !ok {
					firstFit[n] = now
				}
				if since := maxTime(firstFit[n], fitClock); now.Sub(since) > fitBound {
					r.trace.fail("liveness-fit", n, "%s fits the free room but stayed pending for %v with no binding: %s; events: %s\n%s",
						n, now.Sub(since).Round(time.Millisecond), groupLine(s.Groups[n]), r.events(ctx, s.Groups[n]), s.state())
					broken = true
				}
			}
			if lends[n] {
				if _, ok := firstLend[n]; !ok {
					firstLend[n] = now
					r.trace.logf("  %s is refused only by its share and fits the idle room: it must be lent", n)
				}
				if since := maxTime(firstLend[n], fitClock); now.Sub(since) > fitBound {
					r.trace.fail("liveness-lend", n, "%s fits the idle room, no group is entitled to it, and its queue may borrow, but it stayed pending for %v with no binding: %s; events: %s\n%s",
						n, now.Sub(since).Round(time.Millisecond), groupLine(s.Groups[n]), r.events(ctx, s.Groups[n]), s.state())
					broken = true
				}
			}
			if p, ok := plans[n]; ok {
				if _, ok := firstPlan[n]; !ok {
					firstPlan[n] = now
					r.trace.logf("  %s is feasible by %s", n, p)
				}
				if since := maxTime(firstPlan[n], clock); now.Sub(since) > planBound {
					r.trace.fail("liveness-evict", n, "%s is feasible by %s, but stayed pending for %v with no binding: %s; events: %s\n%s",
						n, p, now.Sub(since).Round(time.Millisecond), groupLine(s.Groups[n]), r.events(ctx, s.Groups[n]), s.state())
					broken = true
				}
			}
		}
		if broken {
			r.trace.logf("the scheduler's cache at the violation:\n%s", r.cacheView(ctx, t, s))
			return
		}
		if len(fits) == 0 && len(plans) == 0 && len(lends) == 0 {
			settled++
			if settled >= 3 {
				r.trace.logf("quiescence: settled after %v", time.Since(start).Round(time.Millisecond))
				return
			}
		} else {
			settled = 0
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
	r.trace.logf("quiescence: still moving after %v (progress each time, so no bound was broken)", time.Since(start).Round(time.Millisecond))
}

func maxTime(ts ...time.Time) time.Time {
	var m time.Time
	for _, t := range ts {
		if t.After(m) {
			m = t
		}
	}
	return m
}

// sleepCtx waits d or until ctx ends: the pace of a polling loop, not a
// wait for a condition.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// events are the last Events about a group (its PodGroup, else its first
// pending pod): the scheduler's own account of why it waits.
func (r *run) events(ctx context.Context, g *groupState) string {
	name := g.Name
	if !g.Gang {
		for _, p := range g.Pods {
			name = p.Name
		}
	}
	list, err := r.env.Client.EventsV1().Events(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.Name == name {
			out = append(out, fmt.Sprintf("%s: %s", ev.Reason, ev.Note))
		}
	}
	if len(out) > 3 {
		out = out[len(out)-3:]
	}
	return "[" + strings.Join(out, " | ") + "]"
}
