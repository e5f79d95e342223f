package cache

// A run-time limit declared by annotation (scheduling.caldera.dev/max-run-
// seconds, on the pod or on its PodGroup) is a promise: unlike
// activeDeadlineSeconds, which the kubelet enforces, nothing stops a pod
// that runs past it. Reservations (timeplan.go) are planned on those
// promises: a reservation starts when the pods on its nodes have ended by
// their limits, and later work is let into its room only if it promises to
// end first (backfill). A pod that breaks its promise still holds the room
// at the reservation's start; the plan expects it back at any moment, and
// the reservation would move later pass by pass for as long as it runs.
//
// So when a reservation's start has come (the start the last pass kept is
// not after now) and its group is still not admitted, the pass evicts pods
// on the reservation's nodes that are past a limit they declared by
// annotation: on each node as few as free the room the reservation needs
// there, longest overdue first.
//
//   - Any such pod of Caldera's queues on those nodes, not only one let in
//     as backfill: the reservation's start was planned on the promised end
//     of every pod there, those that ran before it was made as much as
//     those let in around it. The rule needs no memory of how a pod was
//     admitted, so it holds across a restart and is the same on every
//     replica.
//   - Past the limit that counts (LimitOfPod: the smallest wins) and that
//     limit an annotation's. A pod past an activeDeadlineSeconds, its own
//     or its Job's, is the kubelet's or the Job controller's to stop: its
//     room counts as leaving, as does that of pods already terminating or
//     being evicted.
//     Pods Caldera did not admit through a queue (other schedulers' pods,
//     singletons while admitSingletons is off) are never evicted: their
//     room counts as held.
//   - Nothing is evicted for a reservation unless every one of its nodes
//     then has the room it needs: an eviction that starts no one is not
//     made.
//
// The status writer makes the evictions (status.EvictOverruns), the way
// CalderaReclaim's victims go (upstream's preemption Executor): the
// DisruptionTarget condition, then a DELETE that honours the pod's grace
// period, with Events on the pod, its PodGroup and the reserved group. They are in the eviction book (evictions.go) until
// the pod leaves, so neither a later pass nor a reclaim plan counts the
// room twice. Only the replica that schedules evicts.
//
// Cost: nothing while no reservation is kept; per pass that keeps one,
// O(pods whose end changed since the last pass); per due reservation,
// O(pods with a limit on its nodes). The per-node index of the pods with a
// limit is built (one walk of them) when a reservation first comes due and
// kept from pass to pass by the release timeline's marks (releases.go).

import (
	"github.com/caldera-sched/caldera/pkg/status"
)

// OverrunEvictions implements status.Source: the evictions passes chose
// since the last call, in the order chosen.
func (c *Cache) OverrunEvictions() []status.OverrunEviction {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evictions.Overrun.Take()
}

// FinishOverrun implements status.Source: a made eviction stays in the
// eviction book until its pod leaves; a failed one leaves it, so a later
// pass may choose the pod again.
func (c *Cache) FinishOverrun(e status.OverrunEviction, err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evictions.FinishOverrun(e.Pod.UID, err)
}
