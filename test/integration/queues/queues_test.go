// Package queues_test runs queue admission (CalderaEnqueue) end to end with the
// shipped configuration: a real kube-apiserver on an embedded etcd, the CRDs
// from manifests/crds, and the real scheduler.
package queues_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	timeout = 30 * time.Second
	quiet   = 4 * time.Second
)

func TestQueues(t *testing.T) {
	env := harness.Start(t)
	qc, err := qclient.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	inQueue := func(q string) map[string]string { return map[string]string{qapi.QueueLabel: q} }

	t.Run("default queue is created", func(t *testing.T) {
		env.StartScheduler(t)
		harness.WaitFor(t, timeout, func() (bool, error) {
			_, err := qc.SchedulingV1alpha1().Queues().Get(t.Context(), qapi.DefaultQueueName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		}, "the default queue to exist")
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.CreatePod(t, harness.Pod(ns, "plain").CPU("1").Obj())
		// Admitted at once: bound, with no Admitted Event (only a singleton
		// that was NotAdmitted first gets one; docs/queues.md).
		env.WaitBound(t, ns, timeout, "plain")
	})

	t.Run("capability admits one group and holds the second", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		env.CreateQueue(t, "cap4", qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}})
		env.StartScheduler(t)
		for _, g := range []string{"first", "second"} {
			pg := harness.PodGroup(ns, g, 3)
			pg.Labels = inQueue("cap4")
			env.CreatePodGroup(t, pg)
			env.CreatePods(t, harness.Members(ns, g, 3, "1")...)
			if g == "first" {
				env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=first", 3, timeout)
			}
		}
		ev := env.WaitEvent(t, ns, "second", "NotAdmitted", timeout)
		if !strings.Contains(ev.Note, "cap4") || !strings.Contains(ev.Note, "cpu") {
			t.Errorf("NotAdmitted note should name the queue and the resource: %q", ev.Note)
		}
		env.ConsistentlyUnbound(t, ns, quiet, "second-0", "second-1", "second-2")
		harness.WaitFor(t, timeout, func() (bool, error) {
			q, err := qc.SchedulingV1alpha1().Queues().Get(t.Context(), "cap4", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cpu := q.Status.Allocated[v1.ResourceCPU]
			return cpu.Cmp(resource.MustParse("3")) == 0 && q.Status.Pending == 1, nil
		}, "queue cap4 status: allocated cpu 3, one group pending")
		// The first gang finishes; the second then fits the capability.
		env.DeleteGroup(t, ns, "first")
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=second", 3, timeout)
	})

	t.Run("a restarted scheduler keeps an admitted gang's room at capability", func(t *testing.T) {
		// The PodGroups are listed at start-up before the scheduler's pod
		// informer delivers their members: an admitted gang installed from
		// its admitted-at annotation must reserve its minimum once its
		// members arrive, or the first pass admits the other gang too and
		// the queue ends at twice its capability.
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		env.CreateQueue(t, "cap3", qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}})
		for _, g := range []string{"earlier", "later"} {
			pg := harness.PodGroup(ns, g, 3)
			pg.Labels = inQueue("cap3")
			env.CreatePodGroup(t, pg)
		}
		// As the previous process left it: admitted, no member placed yet.
		patch := `{"metadata":{"annotations":{"` + qapi.AdmittedAtAnnotation + `":"` + time.Now().UTC().Add(time.Second).Format(time.RFC3339) + `"}}}`
		if _, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Patch(t.Context(), "earlier", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		env.CreatePods(t, harness.Members(ns, "later", 3, "1")...)
		env.CreatePods(t, harness.Members(ns, "earlier", 3, "1")...)
		env.StartScheduler(t)
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=earlier", 3, timeout)
		ev := env.WaitEvent(t, ns, "later", "NotAdmitted", timeout)
		if !strings.Contains(ev.Note, "cap3") {
			t.Errorf("NotAdmitted note should name queue cap3: %q", ev.Note)
		}
		env.ConsistentlyUnbound(t, ns, quiet, "later-0", "later-1", "later-2")
	})

	t.Run("weights 1 and 3 share 16 cpu as 4 and 12", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 4, "4", "16Gi")
		env.CreateQueue(t, "light", qapi.QueueSpec{Weight: 1})
		env.CreateQueue(t, "heavy", qapi.QueueSpec{Weight: 3})
		// Both queues' demand is in place before the scheduler starts, so
		// the first pass already sees the competition.
		for i := range 16 {
			env.CreatePod(t, harness.Pod(ns, "light-"+strconv.Itoa(i)).CPU("1").Labels(inQueue("light")).Obj())
			env.CreatePod(t, harness.Pod(ns, "heavy-"+strconv.Itoa(i)).CPU("1").Labels(inQueue("heavy")).Obj())
		}
		env.StartScheduler(t)
		env.WaitBoundCount(t, ns, "", 16, 60*time.Second)
		env.ConsistentlyBoundCount(t, ns, 16, quiet)
		light := env.BoundPods(t, ns, qapi.QueueLabel+"=light")
		heavy := env.BoundPods(t, ns, qapi.QueueLabel+"=heavy")
		if light < 3 || light > 5 || heavy < 11 || heavy > 13 {
			t.Fatalf("bound light=%d heavy=%d, want 4 and 12 (+-1)", light, heavy)
		}
	})

	t.Run("closed queue admits nothing new while running work continues", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.CreateQueue(t, "shut", qapi.QueueSpec{Weight: 1})
		env.StartScheduler(t)
		env.CreatePod(t, harness.Pod(ns, "before").CPU("1").Labels(inQueue("shut")).Obj())
		env.WaitBound(t, ns, timeout, "before")
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			q, err := qc.SchedulingV1alpha1().Queues().Get(t.Context(), "shut", metav1.GetOptions{})
			if err != nil {
				return err
			}
			q.Spec.State = qapi.QueueStateClosed
			_, err = qc.SchedulingV1alpha1().Queues().Update(t.Context(), q, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		env.CreatePod(t, harness.Pod(ns, "after").CPU("1").Labels(inQueue("shut")).Obj())
		ev := env.WaitEvent(t, ns, "after", "NotAdmitted", timeout)
		if !strings.Contains(ev.Note, "closed") {
			t.Errorf("NotAdmitted note should say the queue is closed: %q", ev.Note)
		}
		env.ConsistentlyUnbound(t, ns, quiet, "after")
		if n := env.BoundPods(t, ns, ""); n != 1 {
			t.Fatalf("bound pods = %d, want the one admitted before the queue closed", n)
		}
	})

	t.Run("unknown queue waits until the queue is created", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.StartScheduler(t)
		pg := harness.PodGroup(ns, "lost", 2)
		pg.Labels = inQueue("later")
		env.CreatePodGroup(t, pg)
		env.CreatePods(t, harness.Members(ns, "lost", 2, "1")...)
		ev := env.WaitEvent(t, ns, "lost", "NotAdmitted", timeout)
		if !strings.Contains(ev.Note, "later") || !strings.Contains(ev.Note, "not found") {
			t.Errorf("NotAdmitted note should say queue later is not found: %q", ev.Note)
		}
		env.ConsistentlyUnbound(t, ns, quiet)
		env.CreateQueue(t, "later", qapi.QueueSpec{Weight: 1})
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=lost", 2, timeout)
		env.WaitEvent(t, ns, "lost", "Admitted", timeout)
	})

	t.Run("guarantee is honoured", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "16Gi")
		env.CreateQueue(t, "sure", qapi.QueueSpec{Weight: 1, Guarantee: v1.ResourceList{v1.ResourceCPU: resource.MustParse("6")}})
		env.CreateQueue(t, "big", qapi.QueueSpec{Weight: 3})
		for i := range 8 {
			env.CreatePod(t, harness.Pod(ns, "sure-"+strconv.Itoa(i)).CPU("1").Labels(inQueue("sure")).Obj())
			env.CreatePod(t, harness.Pod(ns, "big-"+strconv.Itoa(i)).CPU("1").Labels(inQueue("big")).Obj())
		}
		env.StartScheduler(t)
		// By weight alone "sure" would get 2 of 8 cpu; its guarantee gives it 6.
		env.WaitBoundCount(t, ns, "", 8, 60*time.Second)
		env.ConsistentlyBoundCount(t, ns, 8, quiet)
		if sure, big := env.BoundPods(t, ns, qapi.QueueLabel+"=sure"), env.BoundPods(t, ns, qapi.QueueLabel+"=big"); sure != 6 || big != 2 {
			t.Fatalf("bound sure=%d big=%d, want 6 and 2", sure, big)
		}
	})

	t.Run("parent capability caps its children", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "16Gi")
		env.CreateQueue(t, "dept", qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}})
		env.CreateQueue(t, "dept-team", qapi.QueueSpec{Weight: 1, Parent: "dept"})
		env.StartScheduler(t)
		for i := range 5 {
			env.CreatePod(t, harness.Pod(ns, "t-"+strconv.Itoa(i)).CPU("1").Labels(inQueue("dept-team")).Obj())
		}
		env.WaitBoundCount(t, ns, "", 3, timeout)
		env.ConsistentlyBoundCount(t, ns, 3, quiet)
	})

	t.Run("an elastic gang's members beyond its minimum stay within capability", func(t *testing.T) {
		// Admission reserves the gang's minimum (2 cpu); the other six
		// members were never admitted. Without a capability check when each
		// is placed they all bound once the minimum had, 8 cpu in a queue
		// of 4 (the randomized harness found it).
		ns := env.Namespace(t)
		env.AddNodes(t, 4, "4", "16Gi")
		env.CreateQueue(t, "elastic4", qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}})
		env.StartScheduler(t)
		pg := harness.PodGroup(ns, "elastic", 2)
		pg.Labels = inQueue("elastic4")
		env.CreatePodGroup(t, pg)
		env.CreatePods(t, harness.Members(ns, "elastic", 8, "1")...)
		sel := v1alpha1.PodGroupLabel + "=elastic"
		env.WaitBoundCount(t, ns, sel, 4, timeout)
		env.ConsistentlyBoundCount(t, ns, 4, quiet)
		// Two bound members go: two of the waiting ones take their room.
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		deleted := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || deleted == 2 {
				continue
			}
			if err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
		harness.WaitFor(t, timeout, func() (bool, error) {
			left, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return false, err
			}
			bound := 0
			for _, p := range left.Items {
				if p.Spec.NodeName != "" {
					bound++
				}
			}
			return len(left.Items) == 6 && bound == 4, nil
		}, "6 members left, 4 of them bound")
		env.ConsistentlyBoundCount(t, ns, 4, quiet)
	})

	t.Run("parent cycle is refused and reported on each queue", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		// CEL sees one object at a time: a cycle through two queues passes
		// the API server and must be caught by the scheduler.
		env.CreateQueue(t, "loop-a", qapi.QueueSpec{Weight: 1, Parent: "loop-b"})
		env.CreateQueue(t, "loop-b", qapi.QueueSpec{Weight: 1, Parent: "loop-a"})
		env.StartScheduler(t)
		env.CreatePod(t, harness.Pod(ns, "cyclic").CPU("1").Labels(inQueue("loop-a")).Obj())
		ev := env.WaitEvent(t, ns, "cyclic", "NotAdmitted", timeout)
		if !strings.Contains(ev.Note, "cycle") {
			t.Errorf("NotAdmitted note should name the cycle: %q", ev.Note)
		}
		for _, name := range []string{"loop-a", "loop-b"} {
			harness.WaitFor(t, timeout, func() (bool, error) {
				q, err := qc.SchedulingV1alpha1().Queues().Get(t.Context(), name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				for _, c := range q.Status.Conditions {
					if c.Type == qapi.QueueConditionInvalidParent {
						return c.Status == metav1.ConditionTrue && c.Reason == qapi.ReasonParentCycle, nil
					}
				}
				return false, nil
			}, "queue "+name+" to report InvalidParent/ParentCycle")
		}
		env.ConsistentlyUnbound(t, ns, quiet)
		// Breaking the cycle lets the pod in.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			q, err := qc.SchedulingV1alpha1().Queues().Get(t.Context(), "loop-b", metav1.GetOptions{})
			if err != nil {
				return err
			}
			q.Spec.Parent = ""
			_, err = qc.SchedulingV1alpha1().Queues().Update(t.Context(), q, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		env.WaitBound(t, ns, timeout, "cyclic")
	})

	t.Run("ResourceQuota blocks admission", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "16Gi")
		rq := &v1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "cpu", Namespace: ns},
			Spec:       v1.ResourceQuotaSpec{Hard: v1.ResourceList{"requests.cpu": resource.MustParse("4")}},
		}
		created, err := env.Client.CoreV1().ResourceQuotas(ns).Create(t.Context(), rq, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// No quota controller runs here: play it, so quota admission has a status to charge.
		created.Status = v1.ResourceQuotaStatus{Hard: rq.Spec.Hard, Used: v1.ResourceList{"requests.cpu": resource.MustParse("0")}}
		if _, err := env.Client.CoreV1().ResourceQuotas(ns).UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		env.StartScheduler(t)
		// Two 1-cpu members fit the quota, but the gang's minimum is 6 cpu.
		env.CreatePodGroup(t, harness.PodGroup(ns, "greedy", 2, harness.PGMinResources("6", "1Gi")))
		env.CreatePods(t, harness.Members(ns, "greedy", 2, "1")...)
		ev := env.WaitEvent(t, ns, "greedy", "NotAdmitted", timeout)
		if !strings.Contains(ev.Note, "ResourceQuota cpu") {
			t.Errorf("NotAdmitted note should name the ResourceQuota: %q", ev.Note)
		}
		env.ConsistentlyUnbound(t, ns, quiet)
		// A gang whose minimum fits the quota is admitted.
		env.CreatePodGroup(t, harness.PodGroup(ns, "modest", 2))
		env.CreatePods(t, harness.Members(ns, "modest", 2, "1")...)
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=modest", 2, timeout)
	})

	// The factor decides the cluster-room check only: with 1.5 the second
	// gang passes it (6 <= 4 x 1.5) but its members cannot be placed on the
	// node's free room once the first gang's are (the placement check), so
	// it waits either way, refused by a different check.
	for _, tc := range []struct {
		factor  float64
		refusal string
	}{{1.0, "cluster"}, {1.5, "members not placeable"}} {
		t.Run("overcommit factor "+strconv.FormatFloat(tc.factor, 'f', 1, 64), func(t *testing.T) {
			ns := env.Namespace(t)
			env.AddNodes(t, 1, "4", "8Gi")
			// Two queues so that fairness waives its check for each head
			// group; only the cluster check then decides.
			qx, qy := "ocx-"+ns, "ocy-"+ns
			env.CreateQueue(t, qx, qapi.QueueSpec{Weight: 1})
			env.CreateQueue(t, qy, qapi.QueueSpec{Weight: 1})
			a := harness.PodGroup(ns, "a", 3)
			a.Labels = inQueue(qx)
			b := harness.PodGroup(ns, "b", 3)
			b.Labels = inQueue(qy)
			env.CreatePodGroup(t, a)
			env.CreatePodGroup(t, b)
			env.CreatePods(t, harness.Members(ns, "a", 3, "1")...)
			env.CreatePods(t, harness.Members(ns, "b", 3, "1")...)
			env.StartScheduler(t, harness.WithPluginArgs("CalderaEnqueue", map[string]any{"overcommitFactor": tc.factor}))
			// One of the two is admitted first; the other is refused.
			var reasons map[string][]string
			harness.WaitFor(t, timeout, func() (bool, error) {
				reasons = map[string][]string{}
				admitted, refused := 0, 0
				for _, g := range []string{"a", "b"} {
					gotAdmitted := false
					for _, ev := range env.Events(t, ns, g) {
						reasons[g] = append(reasons[g], ev.Reason+": "+ev.Note)
						switch {
						case ev.Reason == "Admitted":
							gotAdmitted = true
						case ev.Reason == "NotAdmitted" && strings.Contains(ev.Note, tc.refusal):
							refused++
						}
					}
					if gotAdmitted {
						admitted++
					}
				}
				return admitted == 1 && refused >= 1, nil
			}, "admission decisions for overcommit "+strconv.FormatFloat(tc.factor, 'f', 1, 64))
			t.Logf("events: %q", reasons)
		})
	}
}
