// Package volcano_test runs a Volcano-style job end to end: a real
// kube-apiserver with Caldera's and Volcano's CRDs (manifests/crds,
// manifests/crds/volcano) and the real scheduler built from
// manifests/scheduler/config.yaml, with queue admission. The test plays
// Volcano's job controller: it creates the PodGroup first, waits for the
// scheduler to put it Inqueue, and only then creates the pods, annotated
// with the group's name, as that controller does.
package volcano_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/caldera-sched/caldera/pkg/status"
	"github.com/caldera-sched/caldera/test/integration/gangtable"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

const timeout = 30 * time.Second

// TestGangAPIs starts one control plane with Volcano's CRDs for every
// scenario: a Volcano job end to end, then the per-API behaviour table
// (dialects_test.go).
func TestGangAPIs(t *testing.T) {
	env := harness.StartWith(t, harness.WithVolcanoCRDs())
	vcc := vcclient.NewForConfigOrDie(status.CRDConfig(env.Config))
	defer gangtable.Run(t, env, sources(env, vcc)...)

	// Volcano's job controller names the scheduler "volcano" by default;
	// the chart's volcano.schedulerName serves that name with a copy of
	// the batch profile, as this edit does.
	t.Run("pods for the volcano scheduler name are scheduled by its alias profile", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		env.StartScheduler(t, harness.WithConfigEdit(func(cfg map[string]any) error {
			profiles := cfg["profiles"].([]any)
			alias := maps.Clone(profiles[0].(map[string]any))
			alias["schedulerName"] = "volcano"
			cfg["profiles"] = append(profiles, alias)
			return nil
		}))
		createPodGroup(t, vcc, ns, "job", "", 2, "2")
		waitPhase(t, vcc, ns, "job", vc.PodGroupInqueue)
		names := []string{"job-0", "job-1"}
		for _, name := range names {
			p := harness.Pod(ns, name).CPU("1").Scheduler("volcano").Obj()
			p.Annotations = map[string]string{vc.KubeGroupNameAnnotationKey: "job"}
			env.CreatePod(t, p)
		}
		env.WaitBound(t, ns, timeout, names...)
	})

	t.Run("a Volcano Queue field Caldera does not honour gets a Warning Event", func(t *testing.T) {
		env.StartScheduler(t)
		name := "deserved"
		q := &vc.Queue{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       vc.QueueSpec{Weight: 1, Deserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}},
		}
		if _, err := vcc.SchedulingV1beta1().Queues().Create(t.Context(), q, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = vcc.SchedulingV1beta1().Queues().Delete(t.Context(), name, metav1.DeleteOptions{}) })
		// A cluster-scoped object's Events go to the default namespace.
		ev := env.WaitEvent(t, metav1.NamespaceDefault, name, status.ReasonUnsupportedField, timeout)
		if ev.Type != v1.EventTypeWarning || !strings.Contains(ev.Note, "spec.deserved") {
			t.Errorf("Event %s %q, want a Warning naming spec.deserved", ev.Type, ev.Note)
		}
	})

	t.Run("PodGroup first, Inqueue from minResources, gang bound, Running, Completed", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		qname := "vq-" + ns
		createQueue(t, vcc, qname, 1, "4")
		first := createPodGroup(t, vcc, ns, "first", qname, 2, "3")
		env.StartScheduler(t)

		// Admitted from its PodGroup alone: no pod exists.
		pg := waitPhase(t, vcc, ns, "first", vc.PodGroupInqueue)
		if pg.UID != first.UID {
			t.Fatalf("PodGroup replaced: %s", pg.UID)
		}
		// A second gang beyond the queue's remaining capability (1 of 4
		// cpu) stays Pending, and says why.
		createPodGroup(t, vcc, ns, "second", qname, 2, "3")
		second := waitFor(t, vcc, ns, "second", "an Unschedulable condition naming the capability", func(pg *vc.PodGroup) bool {
			return hasCondition(pg, vc.PodGroupUnschedulableType, vc.NotEnoughResourcesReason, "capability")
		})
		if second.Status.Phase != vc.PodGroupPending {
			t.Errorf("second: phase %q, want Pending", second.Status.Phase)
		}
		env.WaitEvent(t, ns, "second", "NotAdmitted", timeout)

		// Volcano's controller now creates the first job's pods.
		names := []string{"first-0", "first-1"}
		for _, name := range names {
			p := harness.Pod(ns, name).CPU("1500m").Obj()
			p.Annotations = map[string]string{vc.KubeGroupNameAnnotationKey: "first"}
			env.CreatePod(t, p)
		}
		env.WaitBound(t, ns, timeout, names...)
		for _, name := range names {
			env.SetPodPhase(t, ns, name, v1.PodRunning)
		}
		pg = waitFor(t, vcc, ns, "first", "phase Running with 2 running", func(pg *vc.PodGroup) bool {
			return pg.Status.Phase == vc.PodGroupRunning && pg.Status.Running == 2
		})
		if !hasCondition(pg, vc.PodGroupScheduled, "Scheduled", "") {
			t.Errorf("first, running: conditions %+v, want Scheduled", pg.Status.Conditions)
		}
		waitQueue(t, vcc, qname, "1 running, 1 pending", func(s vc.QueueStatus) bool {
			return s.Running == 1 && s.Pending == 1 && s.State == vc.QueueStateOpen
		})

		for _, name := range names {
			env.SetPodPhase(t, ns, name, v1.PodSucceeded)
		}
		waitFor(t, vcc, ns, "first", "phase Completed with 2 succeeded", func(pg *vc.PodGroup) bool {
			return pg.Status.Phase == vc.PodGroupCompleted && pg.Status.Succeeded == 2 && pg.Status.Running == 0
		})
		// The first job's room is free again: the second is admitted.
		waitPhase(t, vcc, ns, "second", vc.PodGroupInqueue)
		waitQueue(t, vcc, qname, "1 completed, 1 inqueue", func(s vc.QueueStatus) bool {
			return s.Completed == 1 && s.Inqueue == 1 && s.Pending == 0
		})
	})
}

// createQueue creates a Volcano Queue of weight, reclaimable, with a cpu
// capability unless cpu is "".
func createQueue(t *testing.T, vcc vcclient.Interface, name string, weight int32, cpu string) *vc.Queue {
	t.Helper()
	q := &vc.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: vc.QueueSpec{Weight: weight}}
	if cpu != "" {
		q.Spec.Capability = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	}
	out, err := vcc.SchedulingV1beta1().Queues().Create(t.Context(), q, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Volcano Queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = vcc.SchedulingV1beta1().Queues().Delete(t.Context(), name, metav1.DeleteOptions{})
	})
	return out
}

func createPodGroup(t *testing.T, vcc vcclient.Interface, ns, name, queue string, minMember int32, cpu string) *vc.PodGroup {
	t.Helper()
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	pg := &vc.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       vc.PodGroupSpec{MinMember: minMember, Queue: queue, MinResources: &res},
	}
	out, err := vcc.SchedulingV1beta1().PodGroups(ns).Create(t.Context(), pg, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Volcano PodGroup %s/%s: %v", ns, name, err)
	}
	return out
}

// waitFor waits until the PodGroup satisfies ok and returns it.
func waitFor(t *testing.T, vcc vcclient.Interface, ns, name, what string, ok func(*vc.PodGroup) bool) *vc.PodGroup {
	t.Helper()
	var last *vc.PodGroup
	harness.WaitFor(t, timeout, func() (bool, error) {
		pg, err := vcc.SchedulingV1beta1().PodGroups(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = pg
		return ok(pg), nil
	}, fmt.Sprintf("Volcano PodGroup %s/%s: %s", ns, name, what))
	if t.Failed() && last != nil {
		t.Logf("last status: %+v", last.Status)
	}
	return last
}

func waitPhase(t *testing.T, vcc vcclient.Interface, ns, name string, phase vc.PodGroupPhase) *vc.PodGroup {
	t.Helper()
	return waitFor(t, vcc, ns, name, "phase "+string(phase), func(pg *vc.PodGroup) bool { return pg.Status.Phase == phase })
}

func waitQueue(t *testing.T, vcc vcclient.Interface, name, what string, ok func(vc.QueueStatus) bool) {
	t.Helper()
	harness.WaitFor(t, timeout, func() (bool, error) {
		q, err := vcc.SchedulingV1beta1().Queues().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return ok(q.Status), nil
	}, "Volcano Queue "+name+": "+what)
}

func hasCondition(pg *vc.PodGroup, typ vc.PodGroupConditionType, reason, inMessage string) bool {
	for _, c := range pg.Status.Conditions {
		if c.Type == typ && c.Status == v1.ConditionTrue && c.Reason == reason && strings.Contains(c.Message, inMessage) {
			return true
		}
	}
	return false
}
