// Package sole_test runs Caldera as the cluster's only scheduler: the real
// kube-apiserver and the real scheduler on the shipped sole-scheduler
// configuration (manifests/components/sole-scheduler/config.yaml), whose
// default-scheduler profile schedules the pods that name no scheduler in
// the same process, with the same cache, as Caldera's gangs.
package sole_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	timeout = 60 * time.Second
	// defaultScheduler is the profile pods get when they name no scheduler.
	defaultScheduler = "default-scheduler"
	nodeCPU          = 4
)

// soleConfig is the shipped sole-scheduler configuration.
func soleConfig(env *harness.Env) string {
	return filepath.Join(env.RepoRoot, "manifests", "components", "sole-scheduler", "config.yaml")
}

// defaultPod is a pod of the default-scheduler profile asking for cpu.
func defaultPod(ns, name, cpu string) *v1.Pod {
	return harness.Pod(ns, name).CPU(cpu).Scheduler(defaultScheduler).Obj()
}

// gangSpec is one gang of the mixed test.
type gangSpec struct {
	name string
	size int
	cpu  string
}

func TestSoleScheduler(t *testing.T) {
	env := harness.Start(t)
	nodes := env.AddNodes(t, 4, fmt.Sprint(nodeCPU), "16Gi")
	sched := env.StartScheduler(t, harness.WithConfigFile(soleConfig(env)))

	// Default pods and gangs arrive together on a cluster they overfill
	// (26 CPUs asked of 16): one process places both, so no node is ever
	// over its allocatable, and every pod ends bound or pending with a
	// reason, no gang partly bound, no free room left for a default pod.
	t.Run("default pods and gangs at once on a full cluster", func(t *testing.T) {
		ns := env.Namespace(t)
		gangs := []gangSpec{{"a", 4, "1"}, {"b", 3, "2"}, {"c", 2, "3"}}
		var pods []*v1.Pod
		for _, g := range gangs {
			env.CreatePodGroup(t, harness.PodGroup(ns, g.name, int32(g.size)))
		}
		var members [][]*v1.Pod
		for _, g := range gangs {
			members = append(members, harness.Members(ns, g.name, g.size, g.cpu))
		}
		// Interleaved: a default pod, then one member of each gang in turn.
		for i := range 10 {
			pods = append(pods, defaultPod(ns, fmt.Sprint("web-", i), "1"))
			for _, m := range members {
				if i < len(m) {
					pods = append(pods, m[i])
				}
			}
		}
		env.CreatePods(t, pods...)

		var last string
		deadline := time.Now().Add(timeout)
		for {
			all := listPods(t, env, "")
			checkNodes(t, nodes, all)
			done, why := settled(listPods(t, env, ns), gangs, nodes, all)
			if done {
				t.Logf("settled: %s", why)
				break
			}
			last = why
			if time.Now().After(deadline) {
				t.Fatalf("not settled within %v: %s", timeout, last)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	// The default pods' room is used room for Caldera's admission: a gang
	// that an empty cluster fits four times over waits, with a verdict,
	// while default pods fill the nodes, and is admitted once they leave.
	// The default pods are charged to no queue.
	t.Run("default pods are used room, in no queue", func(t *testing.T) {
		ns := env.Namespace(t)
		// The previous scenario's gangs were charged to queue default; its
		// status shows them until the next status pass after their
		// deletion. Start from a queue that shows nothing, so the check
		// below can only see what this scenario's pods are charged.
		harness.WaitFor(t, timeout, func() (bool, error) {
			got := queueAllocatedCPU(t, env, "default")
			return got.IsZero(), nil
		}, "queue default's status.allocated to drop the previous scenario's gangs")
		// 4 + 4 + 3 + 3 CPUs: 2 free, never 2 on one node. The node
		// selectors pin the spread; the default profile still schedules.
		perNode := []int{4, 4, 3, 3}
		var web []*v1.Pod
		for n, count := range perNode {
			for i := range count {
				p := defaultPod(ns, fmt.Sprintf("web-%d-%d", n, i), "1")
				p.Spec.NodeSelector = map[string]string{v1.LabelHostname: nodes[n].Name}
				web = append(web, p)
			}
		}
		env.CreatePods(t, web...)
		var names []string
		for _, p := range web {
			names = append(names, p.Name)
		}
		env.WaitBound(t, ns, timeout, names...)

		env.CreatePodGroup(t, harness.PodGroup(ns, "train", 2))
		env.CreatePods(t, harness.Members(ns, "train", 2, "2")...)
		const verdict = "members not placeable: 0/2 fit on the free nodes"
		harness.WaitFor(t, timeout, func() (bool, error) {
			pg, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), "train", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return strings.Contains(pg.Annotations[qapi.VerdictAnnotation], verdict), nil
		}, fmt.Sprintf("PodGroup train's verdict to say %q", verdict))
		for _, m := range []string{"train-0", "train-1"} {
			harness.WaitFor(t, timeout, func() (bool, error) {
				p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), m, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				// Refused for want of room (capacity), not by its queue: it
				// runs cycles that mark it Unschedulable, for autoscalers.
				// (The verdict in the pod's condition is the one of its
				// last cycle, which may precede the pass's verdict.)
				c := scheduledCondition(p)
				return c != nil && c.Reason == v1.PodReasonUnschedulable && strings.Contains(c.Message, "waiting for room"), nil
			}, fmt.Sprintf("%s to be Unschedulable, waiting for room", m))
		}
		d := harness.DumpOf(t, sched.CalderaCache())
		if used := d.Cluster.Used[resources.CPU]; used < 14_000 {
			t.Errorf("the cache's cluster used cpu = %dm, want >= 14000m (the default pods)", used)
		}
		for _, q := range d.Queues {
			if q.Name == "default" && q.Allocated[resources.CPU] != 0 {
				t.Errorf("the cache charges queue default %dm cpu with only default pods bound, want 0", q.Allocated[resources.CPU])
			}
		}
		if got := queueAllocatedCPU(t, env, "default"); !got.IsZero() {
			t.Errorf("queue default allocated %s cpu with only default pods bound, want 0", got.String())
		}

		// Free node 2 (3 CPUs used): the gang fits there and is admitted.
		for i := range perNode[2] {
			name := fmt.Sprintf("web-2-%d", i)
			if err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
		}
		env.WaitBound(t, ns, timeout, "train-0", "train-1")
		harness.WaitFor(t, timeout, func() (bool, error) {
			got := queueAllocatedCPU(t, env, "default")
			return got.Cmp(resource.MustParse("4")) == 0, nil
		}, "queue default's status.allocated to show the gang's 4 CPUs, and nothing of the default pods")
		checkNodes(t, nodes, listPods(t, env, ""))
	})
}

// listPods lists the pods of ns ("" for every namespace).
func listPods(t *testing.T, env *harness.Env, ns string) []v1.Pod {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// usedCPU sums, per node, the cpu requests (millicores) of the pods bound to it.
func usedCPU(pods []v1.Pod) map[string]int64 {
	used := map[string]int64{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			used[p.Spec.NodeName] += c.Resources.Requests.Cpu().MilliValue()
		}
	}
	return used
}

// checkNodes fails the test when a node holds more than its allocatable.
func checkNodes(t *testing.T, nodes []*v1.Node, pods []v1.Pod) {
	t.Helper()
	used := usedCPU(pods)
	for _, n := range nodes {
		if alloc := n.Status.Allocatable.Cpu().MilliValue(); used[n.Name] > alloc {
			t.Fatalf("node %s holds %dm cpu of bound pods, over its allocatable %dm", n.Name, used[n.Name], alloc)
		}
	}
}

// settled says whether the mixed test's end state is reached: every pod
// bound or pending with PodScheduled=False and a reason, every gang bound
// wholly or not at all, and no node with room for a pending default pod;
// else what is still missing.
func settled(pods []v1.Pod, gangs []gangSpec, nodes []*v1.Node, all []v1.Pod) (bool, string) {
	bound := map[string]int{}
	defaults := 0
	var pendingDefault *v1.Pod
	for i := range pods {
		p := &pods[i]
		group := p.Labels[gangbook.PodGroupLabel]
		if p.Spec.NodeName != "" {
			if group != "" {
				bound[group]++
			} else {
				defaults++
			}
			continue
		}
		c := scheduledCondition(p)
		if c == nil || c.Status != v1.ConditionFalse || c.Reason == "" {
			return false, fmt.Sprintf("pod %s is pending without a reason", p.Name)
		}
		if c.Reason != v1.PodReasonUnschedulable && !strings.HasPrefix(c.Reason, "WaitingFor") {
			return false, fmt.Sprintf("pod %s is pending with reason %s", p.Name, c.Reason)
		}
		if group == "" {
			pendingDefault = p
		}
	}
	var whole []string
	for _, g := range gangs {
		switch bound[g.name] {
		case 0:
		case g.size:
			whole = append(whole, g.name)
		default:
			return false, fmt.Sprintf("gang %s has %d of %d members bound", g.name, bound[g.name], g.size)
		}
	}
	if pendingDefault != nil {
		need := pendingDefault.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
		used := usedCPU(all)
		for _, n := range nodes {
			if n.Status.Allocatable.Cpu().MilliValue()-used[n.Name] >= need {
				return false, fmt.Sprintf("default pod %s pends while node %s has room", pendingDefault.Name, n.Name)
			}
		}
	}
	slices.Sort(whole)
	return true, fmt.Sprintf("%d default pods and gangs %v bound, the rest pending with a reason", defaults, whole)
}

// scheduledCondition is the pod's PodScheduled condition, nil without one.
func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// queueAllocatedCPU is the cpu of the Queue's status.allocated.
func queueAllocatedCPU(t *testing.T, env *harness.Env, name string) resource.Quantity {
	t.Helper()
	q, err := env.QueueClient().SchedulingV1alpha1().Queues().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return q.Status.Allocated.Cpu().DeepCopy()
}
