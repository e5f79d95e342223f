package volcano_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// quiet is how long a scenario watches for something that must not happen.
const quiet = 4 * time.Second

// dialect is one gang API as a scenario uses it: a queue with a cpu
// capability, a PodGroup in it, and its members.
type dialect struct {
	name string
	// queue creates a reclaimable queue of weight 1, with a cpu capability
	// unless cpu is "".
	queue   func(t *testing.T, name, cpu string)
	group   func(t *testing.T, ns, name, queue string, minMember int32)
	members func(ns, group string, n int, cpu string) []*v1.Pod
}

func dialects(env *harness.Env, vcc vcclient.Interface) []dialect {
	return []dialect{
		{
			name: "scheduler-plugins",
			queue: func(t *testing.T, name, cpu string) {
				spec := qapi.QueueSpec{Weight: 1}
				if cpu != "" {
					spec.Capability = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
				}
				env.CreateQueue(t, name, spec)
			},
			group: func(t *testing.T, ns, name, queue string, minMember int32) {
				pg := harness.PodGroup(ns, name, minMember)
				if queue != "" {
					pg.Labels = map[string]string{qapi.QueueLabel: queue}
				}
				env.CreatePodGroup(t, pg)
			},
			members: harness.Members,
		},
		{
			name: "volcano",
			queue: func(t *testing.T, name, cpu string) {
				createQueue(t, vcc, name, cpu)
			},
			group: func(t *testing.T, ns, name, queue string, minMember int32) {
				pg := &vc.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Spec: vc.PodGroupSpec{MinMember: minMember, Queue: queue}}
				if _, err := vcc.SchedulingV1beta1().PodGroups(ns).Create(t.Context(), pg, metav1.CreateOptions{}); err != nil {
					t.Fatalf("creating Volcano PodGroup: %v", err)
				}
			},
			members: func(ns, group string, n int, cpu string) []*v1.Pod {
				out := make([]*v1.Pod, n)
				for i := range out {
					out[i] = harness.Pod(ns, fmt.Sprintf("%s-%d", group, i)).CPU(cpu).Obj()
					out[i].Annotations = map[string]string{vc.KubeGroupNameAnnotationKey: group}
				}
				return out
			},
		},
	}
}

// converge bounds a reclaim: evictions, then the preemptor's binding.
const converge = 90 * time.Second

// running counts group g's members that hold a node and are not being
// deleted (members are named g-<i>, in either dialect).
func running(t *testing.T, env *harness.Env, ns, g string) int {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, g+"-") && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func names(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// everyDialect runs the gang behaviours once per gang API, with the
// shipped configuration (queue admission included): whatever declared the
// gang, it behaves the same.
func everyDialect(t *testing.T, env *harness.Env, vcc vcclient.Interface) {
	for _, d := range dialects(env, vcc) {
		t.Run(d.name+"/gang that fits is bound whole", func(t *testing.T) {
			ns := env.Namespace(t)
			env.AddNodes(t, 2, "4", "8Gi")
			env.StartScheduler(t)
			d.group(t, ns, "fits", "", 4)
			pods := env.CreatePods(t, d.members(ns, "fits", 4, "1")...)
			env.WaitBound(t, ns, timeout, names(pods)...)
		})
		t.Run(d.name+"/gang of 6 where 4 fit binds none", func(t *testing.T) {
			ns := env.Namespace(t)
			env.AddNodes(t, 4, "1500m", "8Gi")
			env.StartScheduler(t)
			d.group(t, ns, "toobig", "", 6)
			env.CreatePods(t, d.members(ns, "toobig", 6, "1")...)
			env.WaitEvent(t, ns, "toobig", "NotAdmitted", timeout)
			env.ConsistentlyUnbound(t, ns, quiet)
		})
		t.Run(d.name+"/gang waits for its members", func(t *testing.T) {
			ns := env.Namespace(t)
			env.AddNodes(t, 2, "4", "8Gi")
			env.StartScheduler(t)
			d.group(t, ns, "wait", "", 3)
			pods := d.members(ns, "wait", 3, "1")
			env.CreatePods(t, pods[:2]...)
			env.ConsistentlyUnbound(t, ns, quiet)
			env.CreatePod(t, pods[2])
			env.WaitBound(t, ns, timeout, names(pods)...)
		})
		t.Run(d.name+"/queue capability holds the second gang", func(t *testing.T) {
			ns := env.Namespace(t)
			env.AddNodes(t, 2, "4", "8Gi")
			q := "cap-" + ns
			d.queue(t, q, "4")
			env.StartScheduler(t)
			d.group(t, ns, "a", q, 2)
			a := env.CreatePods(t, d.members(ns, "a", 2, "1500m")...)
			env.WaitBound(t, ns, timeout, names(a)...)
			d.group(t, ns, "b", q, 2)
			b := env.CreatePods(t, d.members(ns, "b", 2, "1500m")...)
			ev := env.WaitEvent(t, ns, "b", "NotAdmitted", timeout)
			if want := "queue " + q + ": cpu request 3 exceeds remaining capability 1"; ev.Note != want {
				t.Errorf("NotAdmitted note = %q, want %q", ev.Note, want)
			}
			env.ConsistentlyUnbound(t, ns, quiet, names(b)...)
		})
		t.Run(d.name+"/a starved queue's gang reclaims a whole gang from a queue above its share", func(t *testing.T) {
			ns := env.Namespace(t)
			env.AddNodes(t, 2, "4", "16Gi")
			rich, starved := "rich-"+ns, "starved-"+ns
			d.queue(t, rich, "")
			d.queue(t, starved, "")
			env.StartScheduler(t)
			evicted := env.CountDeletions(t, ns)
			for _, g := range []string{"r1", "r2"} {
				d.group(t, ns, g, rich, 4)
				env.CreatePods(t, d.members(ns, g, 4, "1")...)
			}
			env.WaitBoundCount(t, ns, "", 8, timeout)
			d.group(t, ns, "s", starved, 4)
			s := env.CreatePods(t, d.members(ns, "s", 4, "1")...)
			env.WaitBound(t, ns, converge, names(s)...)
			if n := evicted(); n != 4 {
				t.Errorf("%d evictions, want one rich gang's 4", n)
			}
			r1, r2 := running(t, env, ns, "r1"), running(t, env, ns, "r2")
			if r1+r2 != 4 || r1 != 0 && r1 != 4 {
				t.Errorf("the rich gangs run %d and %d members, want one whole and the other gone", r1, r2)
			}
		})
	}
}
