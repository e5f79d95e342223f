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
			Group: func(t *testing.T, ns, name, queue string, minMember int32, _ string) {
				pg := harness.PodGroup(ns, name, minMember)
				if queue != "" {
					pg.Labels = map[string]string{qapi.QueueLabel: queue}
				}
				env.CreatePodGroup(t, pg)
			},
			Members:        harness.Members,
			StartScheduler: start,
		},
		volcanoSource(vcc, "volcano", start, nil, ""),
		// As Volcano's job controller writes them (v1.10 and later):
		// minResources in ResourceQuota's names, count quotas and limits
		// among them; a task minimum; members with the task-spec
		// annotation.
		volcanoSource(vcc, "volcano, written as its job controller writes", start, func(minMember int32, cpu string) *v1.ResourceList {
			n := resource.MustParse(fmt.Sprint(minMember))
			sum := resource.MustParse(cpu)
			sum.SetMilli(sum.MilliValue() * int64(minMember))
			return &v1.ResourceList{"count/pods": n, v1.ResourcePods: n, "requests.cpu": sum, v1.ResourceCPU: sum,
				"requests.memory": resource.MustParse("1Mi"), "limits.cpu": sum}
		}, "worker"),
	}
}

// volcanoSource is Volcano's gang API: PodGroups with minResources from
// minRes, given minMember and each member's cpu (none when nil), and, with
// task set, a minimum of minMember for that task, whose name the members
// carry.
func volcanoSource(vcc vcclient.Interface, name string, start func(*testing.T), minRes func(int32, string) *v1.ResourceList, task string) gangtable.Source {
	return gangtable.Source{
		Name: name,
		Queue: func(t *testing.T, name string, weight int32, cpu string) {
			createQueue(t, vcc, name, weight, cpu)
		},
		Group: func(t *testing.T, ns, name, queue string, minMember int32, cpu string) {
			pg := &vc.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: vc.PodGroupSpec{MinMember: minMember, Queue: queue}}
			if minRes != nil {
				pg.Spec.MinResources = minRes(minMember, cpu)
			}
			if task != "" {
				pg.Spec.MinTaskMember = map[string]int32{task: minMember}
			}
			if _, err := vcc.SchedulingV1beta1().PodGroups(ns).Create(t.Context(), pg, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating Volcano PodGroup: %v", err)
			}
		},
		Members: func(ns, group string, n int, cpu string) []*v1.Pod {
			out := make([]*v1.Pod, n)
			for i := range out {
				out[i] = harness.Pod(ns, fmt.Sprintf("%s-%d", group, i)).CPU(cpu).Obj()
				out[i].Annotations = map[string]string{vc.KubeGroupNameAnnotationKey: group}
				if task != "" {
					out[i].Annotations["volcano.sh/task-spec"] = task
				}
			}
			return out
		},
		StartScheduler: start,
	}
}
