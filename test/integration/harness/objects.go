package harness

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// PauseImage is the image of every pod the harness builds; nothing runs it.
const PauseImage = "registry.k8s.io/pause:3.10"

// cleanupTimeout bounds the API calls made in t.Cleanup, where the test's
// own context is already cancelled.
const cleanupTimeout = 30 * time.Second

var (
	namespaceSeq atomic.Int64
	nodeSeq      atomic.Int64
	invalidChars = regexp.MustCompile(`[^a-z0-9-]+`)
)

// Namespace creates a namespace unique to t. In t.Cleanup it deletes every
// pod in it with a zero grace period (no kubelet exists to finish a graceful
// deletion), every PodGroup in it, and then the namespace itself, without
// waiting for the namespace to disappear (no namespace controller runs);
// it does wait until no running scheduler's cache holds a pod of it.
func (e *Env) Namespace(t *testing.T) string {
	t.Helper()
	base := strings.Trim(invalidChars.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = strings.TrimRight(base[:40], "-")
	}
	name := fmt.Sprintf("%s-%d", base, namespaceSeq.Add(1))
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
		if e.volcanoRelease {
			// Volcano's job controller would make the jobs' pods again.
			if err := e.Dynamic.Resource(volcanoJobs).Namespace(name).DeleteCollection(ctx, now, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting Volcano jobs in %s: %v", name, err)
			}
		}
		if err := e.Client.CoreV1().Pods(name).DeleteCollection(ctx, now, metav1.ListOptions{}); err != nil {
			t.Errorf("deleting pods in %s: %v", name, err)
		}
		if err := e.PGClient.SchedulingV1alpha1().PodGroups(name).DeleteCollection(ctx, now, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting PodGroups in %s: %v", name, err)
		}
		if e.volcano {
			// No namespace controller runs: an admitted Volcano PodGroup
			// left behind would reserve its minResources in later scenarios.
			if err := e.Dynamic.Resource(volcanoPodGroups).Namespace(name).DeleteCollection(ctx, now, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting Volcano PodGroups in %s: %v", name, err)
			}
		}
		if err := e.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
		// Later scenarios must not find these pods' resources still in use.
		e.waitSchedulerCaches(t, ctx, func(d *internalcache.Dump) bool {
			for _, ni := range d.Nodes {
				for _, pi := range ni.Pods {
					if pi.GetPod().Namespace == name {
						return false
					}
				}
			}
			return true
		}, "no pod of namespace "+name)
	})
	return name
}

// NodeOption changes the nodes that AddNodes creates.
type NodeOption func(*v1.Node)

// NodeLabels adds labels to every node.
func NodeLabels(labels map[string]string) NodeOption {
	return func(n *v1.Node) { maps.Copy(n.Labels, labels) }
}

// NodeTaints adds taints to every node.
func NodeTaints(taints ...v1.Taint) NodeOption {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, taints...) }
}

// NodeResources adds (or overrides) capacity and allocatable resources, for
// example extended resources such as nvidia.com/gpu.
func NodeResources(resources v1.ResourceList) NodeOption {
	return func(n *v1.Node) {
		for name, q := range resources {
			n.Status.Capacity[name] = q
			n.Status.Allocatable[name] = q
		}
	}
}

// NodeNamePrefix names the nodes <prefix>-<sequence> instead of node-<sequence>.
func NodeNamePrefix(prefix string) NodeOption {
	return func(n *v1.Node) { n.GenerateName = prefix }
}

// AddNodes creates n Ready nodes, each with the given allocatable cpu and
// memory (e.g. "4", "8Gi") and room for 110 pods, and deletes them in
// t.Cleanup. Node names are unique for the life of the Env. It returns once
// every running scheduler has the nodes in its cache, and its cleanup waits
// until they have left those caches, so pods created next are scheduled
// against exactly this test's nodes.
func (e *Env) AddNodes(t *testing.T, n int, cpu, mem string, opts ...NodeOption) []*v1.Node {
	t.Helper()
	out := make([]*v1.Node, 0, n)
	// Registered before the per-node deletions, so it runs after them.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		e.waitSchedulerCaches(t, ctx, func(d *internalcache.Dump) bool {
			for _, node := range out {
				if ni, ok := d.Nodes[node.Name]; ok && ni.Node() != nil {
					return false
				}
			}
			return true
		}, "the deletion of this test's nodes")
	})
	for range n {
		resources := v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse(cpu),
			v1.ResourceMemory: resource.MustParse(mem),
			v1.ResourcePods:   resource.MustParse("110"),
		}
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}},
			Status: v1.NodeStatus{
				Capacity:    resources.DeepCopy(),
				Allocatable: resources.DeepCopy(),
				Phase:       v1.NodeRunning,
				Conditions: []v1.NodeCondition{{
					Type:               v1.NodeReady,
					Status:             v1.ConditionTrue,
					Reason:             "KubeletReady",
					LastHeartbeatTime:  metav1.Now(),
					LastTransitionTime: metav1.Now(),
				}},
			},
		}
		for _, o := range opts {
			o(node)
		}
		prefix := node.GenerateName
		if prefix == "" {
			prefix = "node"
		}
		node.GenerateName = ""
		node.Name = fmt.Sprintf("%s-%d", prefix, nodeSeq.Add(1))
		node.Labels[v1.LabelHostname] = node.Name
		status := node.Status

		created, err := e.Client.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating node %s: %v", node.Name, err)
		}
		name := created.Name
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			if err := e.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting node %s: %v", name, err)
			}
		})
		// The apiserver drops status on create: write it separately.
		created.Status = status
		updated, err := e.Client.CoreV1().Nodes().UpdateStatus(t.Context(), created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("setting status of node %s: %v", name, err)
		}
		out = append(out, updated)
	}
	e.waitSchedulerCaches(t, t.Context(), func(d *internalcache.Dump) bool {
		for _, node := range out {
			ni, ok := d.Nodes[node.Name]
			if !ok || ni.Node() == nil || len(ni.Node().Status.Allocatable) == 0 {
				return false
			}
		}
		return true
	}, "the new nodes with their allocatable resources")
	return out
}

// PodBuilder builds a pod for the harness: one pause container, scheduled by
// caldera-scheduler, with a zero termination grace period so that deleting it
// (by a test or by preemption) removes it at once even though it is bound and
// no kubelet exists.
type PodBuilder struct {
	pod *v1.Pod
}

// Pod starts building a pod named name in namespace ns.
func Pod(ns, name string) *PodBuilder {
	return &PodBuilder{pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec: v1.PodSpec{
			SchedulerName:                 DefaultSchedulerName,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []v1.Container{{
				Name:  "pause",
				Image: PauseImage,
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{},
				},
			}},
		},
	}}
}

// CPU sets the container's CPU request, e.g. "500m".
func (b *PodBuilder) CPU(q string) *PodBuilder {
	b.pod.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(q)
	return b
}

// Mem sets the container's memory request, e.g. "1Gi".
func (b *PodBuilder) Mem(q string) *PodBuilder {
	b.pod.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse(q)
	return b
}

// Request sets any resource request of the container, e.g. an extended resource.
func (b *PodBuilder) Request(name v1.ResourceName, q string) *PodBuilder {
	b.pod.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q)
	return b
}

// Group makes the pod a member of PodGroup pg (label scheduling.x-k8s.io/pod-group).
func (b *PodBuilder) Group(pg string) *PodBuilder {
	b.pod.Labels[v1alpha1.PodGroupLabel] = pg
	return b
}

// Priority gives the pod priority p through the PriorityClass
// PriorityClassName(p). The Priority admission plugin rejects a bare
// spec.priority, so create the pod with Env.CreatePod (which creates the
// class) or call Env.EnsurePriorityClass first.
func (b *PodBuilder) Priority(p int32) *PodBuilder {
	b.pod.Spec.PriorityClassName = PriorityClassName(p)
	b.pod.Spec.Priority = ptr.To(p)
	return b
}

// Scheduler sets spec.schedulerName (default caldera-scheduler).
func (b *PodBuilder) Scheduler(name string) *PodBuilder {
	b.pod.Spec.SchedulerName = name
	return b
}

// Labels adds labels to the pod.
func (b *PodBuilder) Labels(labels map[string]string) *PodBuilder {
	maps.Copy(b.pod.Labels, labels)
	return b
}

// NodeSelector adds entries to the pod's node selector.
func (b *PodBuilder) NodeSelector(selector map[string]string) *PodBuilder {
	if b.pod.Spec.NodeSelector == nil {
		b.pod.Spec.NodeSelector = map[string]string{}
	}
	maps.Copy(b.pod.Spec.NodeSelector, selector)
	return b
}

// Obj returns a copy of the pod built so far.
func (b *PodBuilder) Obj() *v1.Pod {
	return b.pod.DeepCopy()
}

// PriorityClassName is the name of the PriorityClass the harness uses for
// priority p.
func PriorityClassName(p int32) string {
	if p < 0 {
		return fmt.Sprintf("harness-priority-minus-%d", -int64(p))
	}
	return fmt.Sprintf("harness-priority-%d", p)
}

// EnsurePriorityClass creates the PriorityClass for priority p if the Env has
// not created it yet, and returns its name. Classes live as long as the Env.
// p must not exceed 1000000000 (higher values are reserved for the system).
func (e *Env) EnsurePriorityClass(t *testing.T, p int32) string {
	t.Helper()
	name := PriorityClassName(p)
	if _, ok := e.priorityClasses.Load(name); ok {
		return name
	}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: p}
	if _, err := e.Client.SchedulingV1().PriorityClasses().Create(t.Context(), pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating PriorityClass %s: %v", name, err)
	}
	e.priorityClasses.Store(name, struct{}{})
	return name
}

// CreatePod creates pod (creating its harness PriorityClass first, if it uses
// one) and returns the created object.
func (e *Env) CreatePod(t *testing.T, pod *v1.Pod) *v1.Pod {
	t.Helper()
	if pod.Spec.Priority != nil && pod.Spec.PriorityClassName == PriorityClassName(*pod.Spec.Priority) {
		e.EnsurePriorityClass(t, *pod.Spec.Priority)
	}
	var created *v1.Pod
	// The Priority admission plugin reads PriorityClasses from an informer,
	// so a class created a moment ago can still be unknown to it: retry that
	// one refusal, bounded.
	err := wait.PollUntilContextTimeout(t.Context(), pollInterval, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = e.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil && apierrors.IsForbidden(err) && strings.Contains(err.Error(), "no PriorityClass with name") {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return created
}

// CreatePods creates each pod with CreatePod, in order.
func (e *Env) CreatePods(t *testing.T, pods ...*v1.Pod) []*v1.Pod {
	t.Helper()
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, e.CreatePod(t, p))
	}
	return out
}

// PodGroupOption changes a PodGroup built by PodGroup.
type PodGroupOption func(*v1alpha1.PodGroup)

// PGTimeout sets spec.scheduleTimeoutSeconds.
func PGTimeout(seconds int32) PodGroupOption {
	return func(pg *v1alpha1.PodGroup) { pg.Spec.ScheduleTimeoutSeconds = ptr.To(seconds) }
}

// PGMinResources sets spec.minResources, e.g. PGMinResources("4", "8Gi").
// An empty string leaves that resource out.
func PGMinResources(cpu, mem string) PodGroupOption {
	return func(pg *v1alpha1.PodGroup) {
		if pg.Spec.MinResources == nil {
			pg.Spec.MinResources = v1.ResourceList{}
		}
		if cpu != "" {
			pg.Spec.MinResources[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			pg.Spec.MinResources[v1.ResourceMemory] = resource.MustParse(mem)
		}
	}
}

// PGMinResourceList sets spec.minResources to a full resource list.
func PGMinResourceList(resources v1.ResourceList) PodGroupOption {
	return func(pg *v1alpha1.PodGroup) { pg.Spec.MinResources = resources.DeepCopy() }
}

// PodGroup builds a PodGroup named name in ns that needs minMember pods.
func PodGroup(ns, name string, minMember int32, opts ...PodGroupOption) *v1alpha1.PodGroup {
	pg := &v1alpha1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.PodGroupSpec{MinMember: minMember},
	}
	for _, o := range opts {
		o(pg)
	}
	return pg
}

// CreatePodGroup creates pg and returns the created object.
func (e *Env) CreatePodGroup(t *testing.T, pg *v1alpha1.PodGroup) *v1alpha1.PodGroup {
	t.Helper()
	created, err := e.PGClient.SchedulingV1alpha1().PodGroups(pg.Namespace).Create(t.Context(), pg, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating PodGroup %s/%s: %v", pg.Namespace, pg.Name, err)
	}
	return created
}

// Members builds n member pods of PodGroup pg, named pg-0 … pg-(n-1), each
// requesting cpu.
func Members(ns, pg string, n int, cpu string) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = Pod(ns, fmt.Sprintf("%s-%d", pg, i)).CPU(cpu).Group(pg).Obj()
	}
	return out
}

// DeleteGroup deletes PodGroup pg and its member pods at once (grace period
// 0), as if the job had finished and been cleaned up.
func (e *Env) DeleteGroup(t *testing.T, ns, pg string) {
	t.Helper()
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if err := e.Client.CoreV1().Pods(ns).DeleteCollection(t.Context(), now, metav1.ListOptions{LabelSelector: v1alpha1.PodGroupLabel + "=" + pg}); err != nil {
		t.Fatalf("deleting members of %s/%s: %v", ns, pg, err)
	}
	if err := e.PGClient.SchedulingV1alpha1().PodGroups(ns).Delete(t.Context(), pg, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting PodGroup %s/%s: %v", ns, pg, err)
	}
}

// QueueClient returns a client of Caldera's Queue API on the test apiserver.
func (e *Env) QueueClient() qclient.Interface {
	return qclient.NewForConfigOrDie(e.Config)
}

// CreateQueue creates a Caldera Queue and deletes it, if it still exists,
// when t ends.
func (e *Env) CreateQueue(t *testing.T, name string, spec qapi.QueueSpec) *qapi.Queue {
	t.Helper()
	queues := e.QueueClient().SchedulingV1alpha1().Queues()
	q := &qapi.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	created, err := queues.Create(t.Context(), q, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := queues.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting queue %s: %v", name, err)
		}
	})
	return created
}

// UpdatePodGroup applies mutate to PodGroup ns/name and writes it,
// retrying on a conflict: the scheduler writes the same object (status,
// the admitted-at annotation) at any time.
func (e *Env) UpdatePodGroup(t *testing.T, ns, name string, mutate func(*v1alpha1.PodGroup)) {
	t.Helper()
	pgs := e.PGClient.SchedulingV1alpha1().PodGroups(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pg, err := pgs.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(pg)
		_, err = pgs.Update(t.Context(), pg, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating PodGroup %s/%s: %v", ns, name, err)
	}
}

// Ungate removes the scheduling gates of pod ns/name, so the scheduler may
// try it.
func (e *Env) Ungate(t *testing.T, ns, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := e.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Spec.SchedulingGates = nil
		_, err = e.Client.CoreV1().Pods(ns).Update(t.Context(), pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("removing scheduling gates of %s/%s: %v", ns, name, err)
	}
}
