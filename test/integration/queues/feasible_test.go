package queues_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestGangsDecidedAsOneUnit: admission asks whether a gang's members can be
// placed, not only whether its total fits; and a child queue starved under
// its parent's capability is admitted into the room reclaim will free.
func TestGangsDecidedAsOneUnit(t *testing.T) {
	env := harness.Start(t)

	// Five 3-cpu members fit 16 cpu in sum but not four 4-cpu nodes (one
	// member per node). Without the placement check the gang was admitted,
	// failed, was released and admitted again, and its admission kept the
	// pod and the gang that fit out.
	t.Run("an unplaceable gang leaves room to a pod and a gang that fit", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 4, "4", "16Gi")
		env.StartScheduler(t)
		env.CreatePodGroup(t, harness.PodGroup(ns, "wide", 5))
		env.CreatePods(t, harness.Members(ns, "wide", 5, "3")...)
		ev := env.WaitEvent(t, ns, "wide", "NotAdmitted", timeout)
		if want := "members not placeable: 4/5 fit on the free nodes"; ev.Note != want {
			t.Errorf("NotAdmitted note = %q, want %q", ev.Note, want)
		}
		// With the gang admitted (15 of 16 cpu, 19.2 with overcommit),
		// the gang that fits would wait behind it for good.
		env.CreatePod(t, harness.Pod(ns, "plain").CPU("4").Obj())
		env.CreatePodGroup(t, harness.PodGroup(ns, "fits", 2))
		env.CreatePods(t, harness.Members(ns, "fits", 2, "3")...)
		env.WaitBound(t, ns, timeout, "plain")
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=fits", 2, timeout)
		env.ConsistentlyUnbound(t, ns, quiet, "wide-0", "wide-1", "wide-2", "wide-3", "wide-4")
	})

	// Parent p holds at most 8 cpu (the cluster's 8); children of weight 1
	// and 3. c1 takes all 8 while c3 is idle; then c3 asks for 8. Without
	// counting what reclaim frees, c3 stayed NotAdmitted ("queue p: cpu
	// request 1 exceeds remaining capability 0") and never reached
	// PostFilter; now it is admitted and reclaims c1 down to 2.
	t.Run("children of weights 1 and 3 reach 1:3 under their parent by reclaim", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "16Gi")
		reclaimable := func(weight int32, parent string) qapi.QueueSpec {
			return qapi.QueueSpec{Weight: weight, Parent: parent, Reclaimable: ptr.To(true)}
		}
		p := reclaimable(1, "")
		p.Capability = v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")}
		env.CreateQueue(t, "p", p)
		env.CreateQueue(t, "c1", reclaimable(1, "p"))
		env.CreateQueue(t, "c3", reclaimable(3, "p"))
		env.StartScheduler(t)
		pods := func(q string, n int) {
			for i := range n {
				env.CreatePod(t, harness.Pod(ns, fmt.Sprintf("%s-%d", q, i)).CPU("1").
					Labels(map[string]string{qapi.QueueLabel: q}).Obj())
			}
		}
		pods("c1", 8)
		env.WaitBoundCount(t, ns, qapi.QueueLabel+"=c1", 8, timeout)
		pods("c3", 8)
		harness.WaitFor(t, 90*time.Second, func() (bool, error) {
			c1 := env.BoundPods(t, ns, qapi.QueueLabel+"=c1")
			c3 := env.BoundPods(t, ns, qapi.QueueLabel+"=c3")
			if c1 < 2 {
				return false, fmt.Errorf("c1 went below its deserved 2: %d bound", c1)
			}
			return c1 == 2 && c3 == 6, nil
		}, "c1 to hold 2 cpu and c3 6 (weights 1:3 under p's 8)")
		env.ConsistentlyBoundCount(t, ns, 8, quiet)
	})
}
