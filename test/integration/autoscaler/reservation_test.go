package autoscaler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/runlimit"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// reservedGangGetsANode: a gang reserved for later, behind a pod that
// declares a ten-minute limit, is still a gang the cluster has no room for
// now. A reservation must not hide it from the autoscaler: its members are
// marked Unschedulable, Karpenter adds a node, and the gang starts there at
// once, not at its reservation, which ends with the admission.
func reservedGangGetsANode(t *testing.T, env *harness.Env, k *harness.Karpenter) {
	t.Run("a gang reserved for later starts on the node the autoscaler adds", func(t *testing.T) {
		startEmpty(t, k)
		ns := env.Namespace(t)
		long := harness.Pod(ns, "long").CPU("6").Obj()
		long.Annotations = map[string]string{runlimit.Annotation: "600"}
		env.CreatePod(t, long)
		static := env.WaitBound(t, ns, 30*time.Second, long.Name)[long.Name]
		env.SetPodPhase(t, ns, long.Name, v1.PodRunning)

		env.CreatePodGroup(t, harness.PodGroup(ns, "train", 2))
		created := time.Now()
		var members []string
		for _, m := range harness.Members(ns, "train", 2, "4") {
			env.CreatePod(t, m)
			members = append(members, m.Name)
		}
		verdict := waitReservedVerdict(t, env, ns, "train")
		bound := env.WaitBound(t, ns, gangTimeout, members...)
		took := time.Since(created)
		for _, m := range members {
			if bound[m] == static {
				t.Errorf("member %s bound on the static node, whose room was reserved for ten minutes on", m)
			}
		}
		assertExactScaleUp(t, k, bound)
		harness.WaitFor(t, 30*time.Second, func() (bool, error) {
			pg, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), "train", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			_, ok := pg.Annotations[qapi.ExpectedStartAnnotation]
			return !ok, nil
		}, "the expected start removed from the started gang's PodGroup")
		t.Logf("gang told %q; bound %v after creation on Karpenter's nodes", verdict, took.Round(time.Millisecond))
	})
}

// gangTimeout bounds a scale-up: Karpenter's batch, the NodeClaim, KWOK's
// node, and the gang's admission and binding.
const gangTimeout = 90 * time.Second

// waitReservedVerdict waits for a NotAdmitted Event about the PodGroup that
// names its reservation, and returns its note. Events stay, so one written
// before the gang was admitted is still seen after.
func waitReservedVerdict(t *testing.T, env *harness.Env, ns, pg string) string {
	t.Helper()
	var note string
	harness.WaitFor(t, 30*time.Second, func() (bool, error) {
		for _, ev := range env.Events(t, ns, pg) {
			if ev.Reason == "NotAdmitted" && strings.Contains(ev.Note, "reserved from ") {
				note = ev.Note
				return true, nil
			}
		}
		return false, nil
	}, fmt.Sprintf("a NotAdmitted Event naming %s/%s's reservation", ns, pg))
	return note
}
