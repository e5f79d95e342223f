// Package queue holds Caldera's queue policy as pure Go: the queue tree, the
// fair-share division (Volcano's proportion plugin) and the admission pass
// (Volcano's enqueue action). It imports no Kubernetes client, framework or
// apimachinery code; pkg/cache translates Queue objects, PodGroups and pods
// into these values and the answers into statuses and Events.
//
// # Amounts
//
// Resources are resources.List vectors of int64: cpu in millicores, other
// resources in base units. Negative amounts count as zero. Every division
// rounds down and every sum saturates, so no input makes the math overflow.
//
// # The tree
//
// Queues form a tree through Spec.Parent; an empty parent (or "root") hangs a
// queue under the implicit root. BuildTree takes the flat list and reports a
// Problem for each queue it cannot place: an empty or reserved name, a
// duplicated name, a parent that does not exist, a parent cycle of any
// length (a queue naming itself is a cycle of one), or an ancestor with one of
// these problems. A queue with a problem takes no part in the division (its
// demand gets nothing, its guarantee reserves nothing) and admits nothing; the
// caller shows the problem as a condition on the Queue.
//
// # Deserved share
//
// Each queue demands what its groups hold, what its admitted groups still need
// and what its pending groups ask for (Usage), plus what its descendants
// demand. A closed queue's pending groups do not count, nor do gangs with
// fewer members than minMember (Pending.PendingRequest): neither can be
// admitted, and counting them would keep other queues out of idle room.
//
// Divide splits the cluster's total among the top-level queues and each
// queue's deserved share among its children, one resource at a time, by
// weighted water-filling: with a common water level L, a queue of weight w
// gets w x L, but never more than its real capability or its demand, and never
// less than its guarantee as far as it demands that much; L is the highest
// level the amount being divided allows. This is the fixed point of Volcano's
// rounds ("give the remainder out by weight, cap by capability and demand,
// raise to guarantee, repeat until nothing changes"), computed exactly in one
// sweep. Example: 16 cpu, queues of weight 1 and 3 that both want more get 4
// and 12; if the second may hold only 8 (capability), the first gets the 8
// left over, up to its demand.
//
// A queue's real capability is its capability, capped by what its parent may
// hold (the cluster total at the top) minus the guarantees of its siblings:
// a guarantee is reserved even while its queue is idle. Deserved never exceeds
// real capability, so a child never exceeds any ancestor's capability, and
// children's deserved shares add up to at most their parent's. When the
// guarantees of one level do not fit in what that level divides, the
// guarantees themselves are water-filled by weight: shares never add up to
// more than exists. Groups submitted to a queue that has children compete
// with those children as one more child of weight 1, without guarantee or
// capability of its own.
//
// A queue's share is the largest, over resources, of allocated / deserved: 0
// for a queue that holds nothing, UnboundedShare when it holds a resource it
// deserves none of. FormatShare renders it for status ("0.42").
//
// # Admission
//
// A group (a gang, or a singleton pod) waits in a Pending until an admission
// pass admits it; its pods are kept out of the scheduling queue until then.
// Its Request is the group's minimum: minResources, else the sum of the
// minMember smallest members' requests. Admit admits a group when it passes
// these checks, in this order (a refusal names the Check it failed):
//
//   - members (CheckMembers): enough member pods exist (groups that lack
//     members sit outside the pass);
//   - queue (CheckQueueMissing, CheckQueueBroken, CheckQueueClosed): its
//     queue exists, has no tree problem and is open;
//   - capability (CheckCapability): for its queue and every ancestor,
//     allocated + inflight + request <= real capability, on the resources
//     the group requests;
//   - fair share (CheckFairness): for its queue and every ancestor,
//     allocated + inflight + request <= deserved (Volcano proportion's
//     allocatable rule). A group whose request alone exceeds a deserved
//     share could never pass: at the head of its queue it is exempt from
//     that level of the check (the head exception), if every other check
//     holds;
//   - cluster (CheckCluster): for every resource it requests, cluster used +
//     every queue's inflight + request <= allocatable x overcommit factor;
//   - placement (CheckPlacement): with Options.Placement, the group's
//     members can be placed together on the nodes' free room. Aggregate
//     checks cannot see fragmentation: five 3-cpu members fit 16 free cpu
//     but not four 4-cpu nodes;
//   - quota (CheckQuota): the optional namespace quota callback agrees. It
//     comes last because the callback counts what it agrees to.
//
// With Options.Reclaim, a group within its own queue's deserved share counts
// as room what reclaim can take back: in the cluster check what every
// reclaimable queue holds above what it keeps (deserved, or its guarantee),
// and in the capability and fair-share checks at each ancestor what the
// queues of that ancestor's subtree off the group's path hold above it.
// Without the latter a child starved under its parent's capability by a
// sibling above its deserved share (parent 8 cpu, weights 1 and 3, 4 and 4
// held) would be refused at the parent forever, and since unadmitted pods
// never reach PostFilter, reclaim would never run. With Options.Preemptible,
// a group refused is tried again counting what preemption frees in its own
// queue, and then counting nothing from reclaim: the scheduler runs one plan
// or the other for a group, never both. The placement check asks about the
// free room first and, when the try counted reclaim or preemption room, again
// with that plan's room added (Plan).
//
// "Inflight" is what admitted groups still need beyond what they hold. An
// admission adds the request to the inflight of its queue, its ancestors and
// the cluster before the next decision, so one pass never admits past a limit.
//
// The pass visits queues by priority, then by lowest share counting what it
// has admitted so far, one admission per visit: queues of equal priority take
// turns, and the queue furthest below its deserved share goes first. Within a
// queue, groups go by priority, creation time and key. A refused group does
// not stop its queue: up to Options.Lookahead refused groups per queue are
// looked past, so small groups flow around a large one. A queue's head is its
// first group, not counting groups refused for reasons of their own
// (namespace quota, a request that can never fit): only the head may use the
// head exception of the fair-share check, and the starvation guard protects
// it. Once it has waited at the head for StarvationThreshold (measured from
// the first pass that found it there), the queue is reserved for it: nothing
// behind it is admitted until it is. A group whose request alone exceeds a
// real capability or the cluster's overcommitted allocatable can only be
// admitted after a spec or cluster change, so it is set aside until those
// limits rise: it neither blocks nor reserves its queue.
//
// Why look past refused groups, and why only a few: stopping a queue at its
// first refusal (strict head-of-line, Lookahead < 0) would leave small groups
// waiting behind a large gang for as long as it does not fit, and would make
// the starvation guard pointless; Volcano's enqueue skips a refused job and
// tries the next. Looking at every group, though, would make a pass cost
// O(pending) when the cluster is full, which is the common case. Within a
// pass, limits only tighten (each admission adds inflight; deserved and
// capabilities are fixed), so a refused group stays refused until the next
// pass and is never examined twice; and past a few refusals the next group is
// unlikely to fit either. So each queue's scan stops after Lookahead
// refusals, and a pass touches O(admitted + queues x Lookahead) groups,
// whatever the number pending. A fair-share refusal (CheckFairness) is no
// more per-group than the others: a smaller group may fit the remaining
// share, so it is looked past like a capability or cluster refusal. Groups
// the pass did not reach report the reason their queue stopped ("waiting
// behind ns/x").
//
// The starvation clock belongs to the head: it starts at the first pass that
// finds a group at the head and refuses it, and restarts when another group
// becomes the head (a higher-priority group arriving overtakes it; a group
// ahead of it being admitted or deleted hands it the head with a new clock).
// The guard reserves the queue, not the cluster: other queues keep admitting.
// A head that holds a reservation over time (Planner.Hold: when its
// members fit together, given the run-time limits of what runs) needs no
// guard: nothing that would delay its start is admitted, from any queue,
// so its queue is not stopped and work behind it that ends in time starts
// (backfill). The guard is for heads without one (what they wait for
// declares no limit). A head refused by the placement check is then
// guarded only when Placement.Reserve can place it on the cluster's empty
// nodes, and the nodes it needs are held for it too (nothing new, from any
// queue, is admitted onto them) until it is admitted or its clock
// restarts. Before the threshold such a gang holds nothing and work behind
// it that fits is admitted.
//
// # Driving it from a cache
//
// The cache keeps one Pending and feeds it events: Set when a group appears or
// changes (queue, priority, request, member count), Delete when it leaves
// without a pass admitting it (deleted, or found admitted after a restart);
// Admit removes the groups it admits itself. Each costs O(log n). On Queue events it rebuilds
// the Tree with BuildTree. For a pass (debounced after events, and
// periodically) it assembles each queue's Usage (allocated and inflight from
// its own aggregates, pending from Pending.PendingRequest), calls Divide and
// Admit, marks Result.Admitted groups admitted (adding their requests to their
// queues' inflight), and reports Pending.Decision to PreEnqueue and in Events.
// The Shares also give each queue's deserved, real capability and share for
// its status. Nothing here is safe for concurrent use; the cache serializes
// calls.
package queue
