// Package plan plans admission over time, Slurm-style: a queue head that
// cannot start now gets a reservation, the earliest time at which its
// minMember members fit together on named nodes given when running pods end
// by their run-time limits, and later work may start now (backfill, or a
// loan across queues) only where it cannot delay a reservation. It is pure
// policy like pkg/queue and pkg/placement: the standard library,
// pkg/placement and nothing of Kubernetes. The cache translates pods
// (activeDeadlineSeconds, requests, nodes) into Allocs and calls it from the
// admission pass.
//
// # Model
//
// Time is int64 seconds on a clock the caller fixes; a Plan has a now.
// Room is dense, as in pkg/placement: node i's free amount of resource j at
// [i*R+j]. A Timeline holds the free room now and, sorted by time, the
// release of every running pod with a limit (End) or an estimated end
// (EstimatedEnd, for pods without a limit). free(t) = free now + the
// releases due by t; it only grows with t. A pod past its limit still
// holds its room: it is expected at now+1.
//
// Reserve(g), for heads in queue order, returns the earliest candidate time
// t (now, a release, a committed job's end, or an earlier reservation's
// end) at which placement's first-fit places g's classes on free(t) minus
// the room of every earlier reservation whose [Start, End) overlaps
// [t, t+g.Limit). A reservation holds its nodes' room over [Start,
// Start+Limit), for ever when the gang has no limit. Counting every
// overlapping hold, not only those active at the same instant, is
// conservative and makes the invariant checkable at starts alone: for each
// reservation i, its room plus the overlapping earlier ones' fits in
// free(Start_i). Since free(t) grows, that bounds every instant.
//
// CanBackfill(j) lets j start now on node n within the free room now and,
// for each reservation starting before j ends, within that reservation's
// slack on n (what is left at its start after it and the reservations
// overlapping it). A job ending by a reservation's start may use its room.
// An unbounded job ends after every start, so it only gets room no
// reservation ever needs. A loan (another queue's work in room a queue is
// owed) follows the same rule: it must end before any reservation whose
// room it uses starts. Commit(j, steps) starts it: the room leaves now and
// the slacks it lives through, and comes back at now+Limit for the Reserve
// calls after it. The reservations stay valid, and a fresh plan over the
// new state finds each of them again no later than before: a job only
// takes slack, and each class is placed one at a time in an order fixed by
// the nodes' capacity, so first-fit takes the same nodes
// (FuzzBackfillNeverDelaysReservation).
//
// Reservation.Guaranteed says Start is a promise: no estimated release on
// its nodes by Start, and no estimated reservation sharing a node starting
// before its End (that one may slip into it). Otherwise Start is an
// estimate: it depends on EstimatedEnd guesses. The plan treats both the
// same. The caller decides what to do with estimates, for example whether
// to show them as ETAs.
//
// # Worked example
//
// One resource (cpu, in cores), three 4-cpu nodes. n0 runs a 4-cpu pod
// until t=100, n1 a 2-cpu pod until t=50 (2 free), n2 an unbounded 2-cpu pod
// (2 free). Gang "train" has two 4-cpu members and a 60 s limit. It fits
// nowhere now; at 50, n1 is empty but n0 is not; at 100 both are. So it is
// reserved on n0 and n1 over [100, 160), and the slack of both at 100 is 0.
// Then, now:
//
//   - a 2-cpu job with a 200 s limit ends after 100. n1's room is reserved,
//     n2's is not, so it goes to n2;
//   - a 2-cpu job with a 30 s limit ends before 100, so it may use n1;
//   - a 1-cpu unbounded job finds n2 full and n0, n1 reserved: it waits.
//
// Example shows the same in code.
//
// # Cost
//
// The Timeline is long-lived: NewTimeline sorts once, O(E log E) for E
// releases. Add and Remove (a pod starts, ends, or changes its estimate)
// are O(changed): a binary search and one memmove of the tail. A Plan is
// per pass. New/Reset sweeps the releases once, O(E x R + K x N x R),
// keeping K <= 64 checkpoints (room snapshots). Reserve binary-searches
// the checkpoints for the first at which every class has room, holds
// aside (O(log K x N)). Then, bucket by bucket, it skips a bucket whose
// end snapshot minus the holds over the whole bucket has no room
// (O(N + holds)). It sweeps the first bucket that may fit (O(E/K) releases,
// keeping per class a count of members the room holds, O(classes) per
// release) and runs placement's first-fit only when every count suffices.
// The worst case is O(E x classes + candidate times x classes x N), and
// maxReservations bounds how many run. CanBackfill is first-fit over
// max-trees of usable room, one per end threshold, so a job that fits
// nowhere is refused at a root. Commit is O(steps x (K + constraints +
// log N)). BenchmarkPass measures 1,000 nodes, 50,000 pods, 200
// reservations and 10,000 backfill candidates.
package plan
