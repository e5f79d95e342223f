package plan_test

import (
	"fmt"

	"github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/plan"
)

// Three 4-cpu nodes (one resource, cpu in cores). n0 runs a 4-cpu pod until
// t=100, n1 a 2-cpu pod until t=50, n2 an unbounded 2-cpu pod. A gang of two
// 4-cpu members with a 60 s limit waits for n0 and n1 to drain: it is
// reserved from 100 to 160. Small jobs then start now only if they cannot
// delay it (the worked example of the package documentation).
func Example() {
	free := []int64{0, 2, 2} // n0, n1, n2: free cpu now
	tl := plan.NewTimeline(1, free, []plan.Alloc{
		{Node: 0, Request: []int64{4}, End: 100},
		{Node: 1, Request: []int64{2}, End: 50},
		{Node: 2, Request: []int64{2}, End: plan.Unbounded},
	})
	p := plan.New(tl, 0, 10)

	r, err := p.Reserve(plan.Gang{Key: "train", Limit: 60,
		Classes: []placement.Class{{Request: []int64{4}, Count: 2}}})
	fmt.Println(r.Key, "start", r.Start, "end", r.End, "steps", r.Steps, "guaranteed", r.Guaranteed, err)

	for _, j := range []struct {
		name string
		job  plan.Job
	}{
		{"2 cpu for 200 s", plan.Job{Limit: 200, Classes: []placement.Class{{Request: []int64{2}, Count: 1}}}},
		{"2 cpu for 30 s", plan.Job{Limit: 30, Classes: []placement.Class{{Request: []int64{2}, Count: 1}}}},
		{"1 cpu unbounded", plan.Job{Classes: []placement.Class{{Request: []int64{1}, Count: 1}}}},
	} {
		steps, ok := p.CanBackfill(j.job)
		fmt.Println(j.name, "->", ok, steps)
		if ok {
			p.Commit(j.job, steps)
		}
	}
	// Output:
	// train start 100 end 160 steps [{0 0} {0 1}] guaranteed true <nil>
	// 2 cpu for 200 s -> true [{0 2}]
	// 2 cpu for 30 s -> true [{0 1}]
	// 1 cpu unbounded -> false []
}
