package queue_test

import (
	"fmt"
	"time"

	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// A cache drives the package like this: it keeps a Pending up to date from
// events, and on each admission pass divides the cluster and admits.
func Example() {
	cpu := func(cores int64) resources.List { return resources.List{resources.CPU: cores * 1000} }
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	// On Queue events: rebuild the tree.
	tree := queue.BuildTree([]queue.Spec{
		{Name: "team-a", Weight: 1, Capability: cpu(4)},
		{Name: "team-b", Weight: 3},
	})

	// On PodGroup and pod events: Set or Delete groups, O(log n) each.
	pending := queue.NewPending()
	pending.Set(queue.Group{Key: queue.GroupUnit("ns", "a1"), Queue: "team-a", Created: now, Request: cpu(3), Members: 4, MinMember: 4})
	pending.Set(queue.Group{Key: queue.GroupUnit("ns", "a2"), Queue: "team-a", Created: now.Add(time.Second), Request: cpu(3), Members: 4, MinMember: 4})
	pending.Set(queue.Group{Key: queue.GroupUnit("ns", "b1"), Queue: "team-b", Created: now, Request: cpu(8), Members: 2, MinMember: 2})
	pending.Set(queue.Group{Key: queue.GroupUnit("ns", "b2"), Queue: "team-b", Created: now, Request: cpu(1), Members: 1, MinMember: 2})

	// On a pass: usage from the cache's aggregates plus the pending requests.
	usage := map[string]queue.Usage{}
	for _, q := range []string{"team-a", "team-b"} {
		usage[q] = queue.Usage{Pending: pending.PendingRequest(q)}
	}
	total := cpu(16)
	shares := queue.Divide(tree, total, usage)
	res := pending.Admit(shares, queue.Cluster{Allocatable: total}, queue.Options{OvercommitFactor: 1.2}, now)

	for _, o := range res.Admitted {
		fmt.Println(o.Group.Key, o.Decision.Message())
	}
	for _, key := range []queue.Key{queue.GroupUnit("ns", "a2"), queue.GroupUnit("ns", "b2")} {
		d, _ := pending.Decision(key)
		fmt.Println(key, d.Message())
	}
	for _, q := range []string{"team-a", "team-b"} {
		st, _ := shares.Get(q)
		fmt.Println(q, "deserved", st.Deserved, "share", queue.FormatShare(st.Share))
	}
	// Output:
	// pg:ns/a1 admitted to queue team-a
	// pg:ns/b1 admitted to queue team-b
	// pg:ns/a2 queue team-a: cpu request 3 exceeds remaining capability 1
	// pg:ns/b2 waiting for members: 1/2
	// team-a deserved cpu=4 share 0.00
	// team-b deserved cpu=8 share 0.00
}
