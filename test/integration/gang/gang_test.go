// Package gang_test runs CalderaGang end to end: a real kube-apiserver on an
// embedded etcd, the CRDs from manifests/crds, and the real scheduler built
// from manifests/scheduler/config.yaml. One apiserver serves every scenario;
// each scenario gets its own namespace, nodes and scheduler.
//
// The scheduler runs without CalderaEnqueue: queue admission in front of the
// gangs would keep the scenarios' competing groups from ever reaching Permit.
// test/integration/queues covers admission with the full configuration.
package gang_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	bindTimeout = 30 * time.Second
	// quiet is how long a scenario watches for something that must NOT
	// happen, after it has seen the scheduler act on the pods.
	quiet = 4 * time.Second
)

// gangOnly runs the shipped configuration without queue admission.
var gangOnly = harness.WithoutPlugin("CalderaEnqueue")

func TestGang(t *testing.T) {
	env := harness.Start(t)

	t.Run("plain pod is bound", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		env.StartScheduler(t, gangOnly)
		env.CreatePod(t, harness.Pod(ns, "plain").CPU("1").Obj())
		env.WaitBound(t, ns, bindTimeout, "plain")
	})

	t.Run("gang that fits is fully bound", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		env.StartScheduler(t, gangOnly)
		env.CreatePodGroup(t, harness.PodGroup(ns, "fits", 4))
		env.CreatePods(t, harness.Members(ns, "fits", 4, "1")...)
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=fits", 4, bindTimeout)
		env.WaitEvent(t, ns, "fits", "Scheduled", bindTimeout)
	})

	t.Run("gang of 6 where 4 fit binds none", func(t *testing.T) {
		ns := env.Namespace(t)
		// 6 cpu in all, but only one 1-cpu member fits on each 1.5-cpu node.
		env.AddNodes(t, 4, "1500m", "8Gi")
		env.StartScheduler(t, gangOnly)
		env.CreatePodGroup(t, harness.PodGroup(ns, "toobig", 6))
		env.CreatePods(t, harness.Members(ns, "toobig", 6, "1")...)
		ev := env.WaitEvent(t, ns, "toobig", "Unschedulable", bindTimeout)
		if !strings.Contains(ev.Note, "members unschedulable") || !strings.Contains(ev.Note, "Insufficient cpu") {
			t.Errorf("Unschedulable event should say which members failed and why, got %q", ev.Note)
		}
		env.ConsistentlyUnbound(t, ns, quiet)
	})

	t.Run("gang larger than the cluster is refused at once", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "2", "8Gi")
		env.StartScheduler(t, gangOnly)
		env.CreatePodGroup(t, harness.PodGroup(ns, "huge", 6))
		env.CreatePods(t, harness.Members(ns, "huge", 6, "1")...)
		ev := env.WaitEvent(t, ns, "huge", "Unschedulable", bindTimeout)
		want := "PodGroup " + ns + "/huge needs 6 cpu for its 6 minimum members, more than the cluster's total allocatable 4"
		if ev.Note != want {
			t.Errorf("Unschedulable event note = %q, want %q", ev.Note, want)
		}
		// Adding a node that makes the cluster big enough lets the gang run.
		env.AddNodes(t, 1, "2", "8Gi")
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=huge", 6, 60*time.Second)
	})

	t.Run("lowering minMember lets a refused gang run", func(t *testing.T) {
		// kube-scheduler does not watch PodGroups; Caldera's cache retries
		// the members when the spec changes. Nothing else would: no node or
		// pod event comes, and the cluster stays too small for 6.
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "2", "8Gi")
		env.StartScheduler(t, gangOnly)
		env.CreatePodGroup(t, harness.PodGroup(ns, "shrinks", 6))
		env.CreatePods(t, harness.Members(ns, "shrinks", 6, "1")...)
		env.WaitEvent(t, ns, "shrinks", "Unschedulable", bindTimeout)
		env.UpdatePodGroup(t, ns, "shrinks", func(pg *v1alpha1.PodGroup) { pg.Spec.MinMember = 4 })
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=shrinks", 4, bindTimeout)
	})

	t.Run("gang waits for missing members then binds", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.StartScheduler(t, gangOnly)
		env.CreatePodGroup(t, harness.PodGroup(ns, "late", 3))
		pods := harness.Members(ns, "late", 3, "1")
		env.CreatePods(t, pods[:2]...)
		ev := env.WaitEvent(t, ns, "late", "Waiting", bindTimeout)
		if ev.Note != "waiting for members: 2/3" {
			t.Errorf("Waiting event note = %q, want %q", ev.Note, "waiting for members: 2/3")
		}
		env.ConsistentlyUnbound(t, ns, quiet)
		env.CreatePods(t, pods[2])
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=late", 3, bindTimeout)
	})

	t.Run("two competing gangs never deadlock", func(t *testing.T) {
		ns := env.Namespace(t)
		// 4 cpu in all: each gang needs 3, so only one can run at a time.
		env.AddNodes(t, 2, "2", "8Gi")
		env.StartScheduler(t, gangOnly)
		env.CreatePodGroup(t, harness.PodGroup(ns, "a", 3))
		env.CreatePodGroup(t, harness.PodGroup(ns, "b", 3))
		a, b := harness.Members(ns, "a", 3, "1"), harness.Members(ns, "b", 3, "1")
		for i := range a {
			env.CreatePods(t, a[i], b[i])
		}
		var winner, loser string
		harness.WaitFor(t, bindTimeout, func() (bool, error) {
			na := env.BoundPods(t, ns, v1alpha1.PodGroupLabel+"=a")
			nb := env.BoundPods(t, ns, v1alpha1.PodGroupLabel+"=b")
			switch {
			case na == 3 && nb == 0:
				winner, loser = "a", "b"
				return true, nil
			case nb == 3 && na == 0:
				winner, loser = "b", "a"
				return true, nil
			}
			return false, nil
		}, "one gang fully bound and the other at 0")
		env.WaitEvent(t, ns, loser, "Unschedulable", bindTimeout)
		if n := env.BoundPods(t, ns, v1alpha1.PodGroupLabel+"="+loser); n != 0 {
			t.Fatalf("losing gang %s has %d bound members, want 0", loser, n)
		}
		// The winner finishes and goes away; the loser then gets the room.
		env.DeleteGroup(t, ns, winner)
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"="+loser, 3, 60*time.Second)
	})

	t.Run("pod naming a missing PodGroup waits then binds", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.StartScheduler(t, gangOnly)
		env.CreatePods(t, harness.Members(ns, "ghost", 2, "1")...)
		ev := env.WaitEvent(t, ns, "ghost-0", "Waiting", bindTimeout)
		if ev.Note != "waiting for PodGroup "+ns+"/ghost" {
			t.Errorf("Waiting event note = %q", ev.Note)
		}
		env.ConsistentlyUnbound(t, ns, quiet)
		env.CreatePodGroup(t, harness.PodGroup(ns, "ghost", 2))
		env.WaitBound(t, ns, bindTimeout, "ghost-0", "ghost-1")
	})

	t.Run("PodGroup phases follow members", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.StartScheduler(t, gangOnly)
		env.CreatePodGroup(t, harness.PodGroup(ns, "life", 2))
		env.WaitPodGroupPhase(t, ns, "life", v1alpha1.PodGroupPending, bindTimeout)
		env.CreatePods(t, harness.Members(ns, "life", 2, "1")...)
		env.WaitBound(t, ns, bindTimeout, "life-0", "life-1")
		pg := env.WaitPodGroupPhase(t, ns, "life", v1alpha1.PodGroupScheduling, bindTimeout)
		if pg.Status.ScheduleStartTime.IsZero() {
			t.Errorf("scheduleStartTime not set: %+v", pg.Status)
		}
		env.SetPodPhase(t, ns, "life-0", v1.PodRunning)
		env.SetPodPhase(t, ns, "life-1", v1.PodRunning)
		pg = env.WaitPodGroupPhase(t, ns, "life", v1alpha1.PodGroupRunning, bindTimeout)
		if pg.Status.Running != 2 {
			t.Errorf("running = %d, want 2", pg.Status.Running)
		}
		env.SetPodPhase(t, ns, "life-0", v1.PodSucceeded)
		env.SetPodPhase(t, ns, "life-1", v1.PodSucceeded)
		pg = env.WaitPodGroupPhase(t, ns, "life", v1alpha1.PodGroupFinished, bindTimeout)
		if pg.Status.Succeeded != 2 || pg.Status.Running != 0 {
			t.Errorf("status = %+v, want succeeded 2 running 0", pg.Status)
		}
	})

	t.Run("failed members fail the group", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.StartScheduler(t, gangOnly)
		env.CreatePodGroup(t, harness.PodGroup(ns, "crash", 2))
		env.CreatePods(t, harness.Members(ns, "crash", 2, "1")...)
		env.WaitBound(t, ns, bindTimeout, "crash-0", "crash-1")
		env.SetPodPhase(t, ns, "crash-0", v1.PodRunning)
		env.SetPodPhase(t, ns, "crash-1", v1.PodFailed)
		pg := env.WaitPodGroupPhase(t, ns, "crash", v1alpha1.PodGroupFailed, bindTimeout)
		if pg.Status.Failed != 1 || pg.Status.Running != 1 {
			t.Errorf("status = %+v, want failed 1 running 1", pg.Status)
		}
	})

	t.Run("members that cannot reach Permit do not count towards minMember", func(t *testing.T) {
		// A gated member and one of another scheduler never reach
		// CalderaGang's Permit: counted, the others would reserve nodes,
		// time out, back off and start over, holding room each round.
		// (A scheduler killed while members wait in Permit is
		// test/integration/faults' TestSchedulerKilledWhileMembersWaitInPermit.)
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.StartScheduler(t, gangOnly)
		env.CreatePodGroup(t, harness.PodGroup(ns, "held", 3, harness.PGTimeout(600)))
		pods := harness.Members(ns, "held", 4, "1")
		pods[2].Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/hold"}}
		pods[3].Spec.SchedulerName = "another-scheduler"
		env.CreatePods(t, pods...)
		ev := env.WaitEvent(t, ns, "held", "Waiting", bindTimeout)
		if want := "waiting for members: 2/3 (2 more exist but are gated or name another scheduler)"; ev.Note != want {
			t.Errorf("Waiting event note = %q, want %q", ev.Note, want)
		}
		// The two reachable members hold nothing: a 3-cpu pod fits the
		// 4-cpu node.
		env.CreatePod(t, harness.Pod(ns, "probe").CPU("3").Obj())
		env.WaitBound(t, ns, bindTimeout, "probe")
		env.ConsistentlyUnbound(t, ns, quiet, "held-0", "held-1")
		if err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), "probe", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		env.Ungate(t, ns, pods[2].Name)
		env.WaitBound(t, ns, bindTimeout, "held-0", "held-1", "held-2")
	})

	t.Run("a restarted scheduler never shows a finishing gang with members missing", func(t *testing.T) {
		// Unfinished members come from the scheduler's own pod informer,
		// finished ones from Caldera's: the new scheduler must not write
		// status before both have listed, nor when a member moves between
		// them (docs/design.md, "Where members come from").
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		s := env.StartScheduler(t, gangOnly)
		env.CreatePodGroup(t, harness.PodGroup(ns, "rst", 3))
		env.CreatePods(t, harness.Members(ns, "rst", 3, "1")...)
		env.WaitBound(t, ns, bindTimeout, "rst-0", "rst-1", "rst-2")
		for _, name := range []string{"rst-0", "rst-1", "rst-2"} {
			env.SetPodPhase(t, ns, name, v1.PodRunning)
		}
		env.SetPodPhase(t, ns, "rst-0", v1.PodSucceeded)
		before := waitPodGroupStatus(t, env, ns, "rst", func(st v1alpha1.PodGroupStatus) bool { return st.Running == 2 && st.Succeeded == 1 })
		s.Stop()

		ctx, cancel := context.WithTimeout(t.Context(), bindTimeout)
		defer cancel()
		w, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Watch(ctx, metav1.ListOptions{
			FieldSelector: "metadata.name=rst", ResourceVersion: before.ResourceVersion,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		env.StartScheduler(t, gangOnly)
		// A change the new scheduler must write: every status it wrote
		// before shows the gang as it was.
		env.SetPodPhase(t, ns, "rst-1", v1.PodSucceeded)
		written := false
		for ev := range w.ResultChan() {
			pg, ok := ev.Object.(*v1alpha1.PodGroup)
			if !ok {
				t.Fatalf("watch event %s: %T", ev.Type, ev.Object)
			}
			st := pg.Status
			if st.Running == 1 && st.Succeeded == 2 {
				written = true // the change
				break
			}
			if st.Running != 2 || st.Succeeded != 1 || st.Phase != v1alpha1.PodGroupRunning {
				t.Fatalf("the restarted scheduler wrote %+v, before it wrote the change; the gang was running 2, succeeded 1", st)
			}
		}
		if !written {
			t.Fatalf("the restarted scheduler did not write running 1, succeeded 2 within %v", bindTimeout)
		}
	})

	t.Run("CRD rejects minMember below 1", func(t *testing.T) {
		ns := env.Namespace(t)
		gvr := schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
		for _, min := range []int64{0, -1} {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "scheduling.x-k8s.io/v1alpha1",
				"kind":       "PodGroup",
				"metadata":   map[string]any{"name": "bad", "namespace": ns},
				"spec":       map[string]any{"minMember": min},
			}}
			_, err := env.Dynamic.Resource(gvr).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "minMember") {
				t.Errorf("minMember %d: want an Invalid error naming minMember, got %v", min, err)
			}
		}
	})
}

// waitPodGroupStatus waits until PodGroup ns/name's status satisfies ok and
// returns the PodGroup.
func waitPodGroupStatus(t *testing.T, env *harness.Env, ns, name string, ok func(v1alpha1.PodGroupStatus) bool) *v1alpha1.PodGroup {
	t.Helper()
	var pg *v1alpha1.PodGroup
	harness.WaitFor(t, bindTimeout, func() (bool, error) {
		var err error
		pg, err = env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), name, metav1.GetOptions{})
		return err == nil && ok(pg.Status), err
	}, "PodGroup "+ns+"/"+name+" status")
	return pg
}
