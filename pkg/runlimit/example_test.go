package runlimit_test

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// A pod of a gang declares 2 h on its template; its PodGroup promises 90
// min for the whole job, so the group's limit holds. The pod started at
// 10:00:00.5 and ends at 11:30:01 at the latest.
func ExampleOf() {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{runlimit.Annotation: "7200"},
	}}
	group := map[string]string{runlimit.Annotation: "5400"}
	l, err := runlimit.Of(pod, group)
	fmt.Println(l, err)

	start := time.Date(2026, 1, 1, 10, 0, 0, 5e8, time.UTC)
	end := runlimit.EndOf(start, l)
	fmt.Println(time.Unix(end, 0).UTC().Format(time.TimeOnly))

	// At 12:00 it still runs: overdue, expected to leave any moment.
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Unix()
	fmt.Println(runlimit.Overdue(end, now), runlimit.Expected(end, now)-now)

	_, err = runlimit.Of(&v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{runlimit.Annotation: "2h"},
	}}, nil)
	fmt.Println(err)
	// Output:
	// 5400s (PodGroup annotation) <nil>
	// 11:30:01
	// true 1
	// pod annotation scheduling.caldera.dev/max-run-seconds="2h": a duration, not a whole number of seconds: write "7200"; ignored, as if absent
}

// The queue's last jobs ran 10 to 100 minutes; 90% of them within 90
// (5400 s), answered as the upper edge of its bin (5376-5631 s).
func ExampleEstimator() {
	e := runlimit.NewEstimator(runlimit.Config{})
	for m := int64(10); m <= 100; m += 10 {
		e.Observe("team-a", m*60)
	}
	est := e.Estimate("team-a", 0)
	fmt.Printf("%d s from the %s's %d jobs\n", est.Seconds, est.Basis, est.Samples)

	// A job that has run 95 minutes has outrun all but one: too few to
	// rank, so twice its run so far.
	est = e.Estimate("team-a", 95*60)
	fmt.Printf("%d min (%s)\n", est.Seconds/60, est.Basis)
	// Output:
	// 5631 s from the queue's 10 jobs
	// 190 min (outran)
}
