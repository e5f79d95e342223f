package volcano_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/gangtable"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// sources are scheduler-plugins' and Volcano's gang APIs as the per-API
// table (test/integration/gangtable) uses them.
func sources(env *harness.Env, vcc vcclient.Interface) []gangtable.Source {
	start := func(t *testing.T) { env.StartScheduler(t) }
	return []gangtable.Source{
		{
			Name: "scheduler-plugins",
			Queue: func(t *testing.T, name string, weight int32, cpu string) {
				spec := qapi.QueueSpec{Weight: weight}
				if cpu != "" {
					spec.Capability = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
				}
				env.CreateQueue(t, name, spec)
			},
			Group: func(t *testing.T, ns, name, queue string, minMember int32) {
				pg := harness.PodGroup(ns, name, minMember)
				if queue != "" {
					pg.Labels = map[string]string{qapi.QueueLabel: queue}
				}
				env.CreatePodGroup(t, pg)
			},
			Members:        harness.Members,
			StartScheduler: start,
		},
		{
			Name: "volcano",
			Queue: func(t *testing.T, name string, weight int32, cpu string) {
				createQueue(t, vcc, name, weight, cpu)
			},
			Group: func(t *testing.T, ns, name, queue string, minMember int32) {
				pg := &vc.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Spec: vc.PodGroupSpec{MinMember: minMember, Queue: queue}}
				if _, err := vcc.SchedulingV1beta1().PodGroups(ns).Create(t.Context(), pg, metav1.CreateOptions{}); err != nil {
					t.Fatalf("creating Volcano PodGroup: %v", err)
				}
			},
			Members: func(ns, group string, n int, cpu string) []*v1.Pod {
				out := make([]*v1.Pod, n)
				for i := range out {
					out[i] = harness.Pod(ns, fmt.Sprintf("%s-%d", group, i)).CPU(cpu).Obj()
					out[i].Annotations = map[string]string{vc.KubeGroupNameAnnotationKey: group}
				}
				return out
			},
			StartScheduler: start,
		},
	}
}
