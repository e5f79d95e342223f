// Package upstreamgangs_test runs Kubernetes' own gangs (scheduling.k8s.io/v1beta1
// PodGroups, feature gate GenericWorkload) through Caldera on a real
// kube-apiserver that serves them, with the real caldera-scheduler command
// and the shipped configuration (queue admission included). The scheduler
// runs as a process of its own, with its own feature gates at their
// defaults, as in a cluster whose API server enables the API: an
// in-process scheduler would read the gates the test apiserver copies into
// this process. The rows are the per-API behaviour table
// (test/integration/gangtable) run for the third source, plus what is
// upstream's own: disruptionMode, the basic policy, Caldera's conditions
// beside upstream's, and an Indexed Job whose PodGroup the Job controller
// makes (WorkloadWithJob).
package upstreamgangs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	schedalpha "k8s.io/api/scheduling/v1alpha3"
	sched "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/upstream"
	"github.com/caldera-sched/caldera/test/integration/gangtable"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	timeout = 30 * time.Second
	// quiet is how long a scenario watches for something that must not happen.
	quiet = 4 * time.Second
	// converge bounds a reclaim: evictions, then the preemptor's binding.
	converge = 90 * time.Second
)

func TestMain(m *testing.M) {
	harness.RunSchedulerProcess()
	os.Exit(m.Run())
}

// group creates an upstream PodGroup: a gang of minCount (basic when 0),
// in queue q unless q is "", with disruptionMode all when all.
func group(t *testing.T, env *harness.Env, ns, name, q string, minCount int32, all bool) {
	t.Helper()
	pg := &sched.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if minCount > 0 {
		pg.Spec.SchedulingPolicy.Gang = &sched.GangSchedulingPolicy{MinCount: minCount}
	} else {
		pg.Spec.SchedulingPolicy.Basic = &sched.BasicSchedulingPolicy{}
	}
	if q != "" {
		pg.Labels = map[string]string{qapi.QueueLabel: q}
	}
	if all {
		pg.Spec.DisruptionMode = &sched.DisruptionMode{All: &sched.AllDisruptionMode{}}
	}
	if _, err := env.Client.SchedulingV1beta1().PodGroups(ns).Create(t.Context(), pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating upstream PodGroup: %v", err)
	}
}

// members builds n pods of PodGroup g, named g-0 … g-(n-1), joining it by
// spec.schedulingGroup.podGroupName.
func members(ns, g string, n int, cpu string) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = harness.Pod(ns, fmt.Sprintf("%s-%d", g, i)).CPU(cpu).Obj()
		out[i].Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(g)}
	}
	return out
}

// queue creates a reclaimable Caldera Queue of weight, with a cpu
// capability unless cpu is "".
func queue(t *testing.T, env *harness.Env, name string, weight int32, cpu string) {
	spec := qapi.QueueSpec{Weight: weight}
	if cpu != "" {
		spec.Capability = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	}
	env.CreateQueue(t, name, spec)
}

// waitCondition waits for the PodGroup's condition typ to have status st
// and returns the PodGroup.
func waitCondition(t *testing.T, env *harness.Env, ns, name, typ string, st metav1.ConditionStatus) *sched.PodGroup {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *sched.PodGroup
	for time.Now().Before(deadline) {
		pg, err := env.Client.SchedulingV1beta1().PodGroups(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err == nil {
			last = pg
			if c := meta.FindStatusCondition(pg.Status.Conditions, typ); c != nil && c.Status == st {
				return pg
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	var conds []metav1.Condition
	if last != nil {
		conds = last.Status.Conditions
	}
	t.Fatalf("PodGroup %s/%s: condition %s never %s; conditions %+v", ns, name, typ, st, conds)
	return nil
}

// waitConditionMessage waits until PodGroup ns/name has condition typ with
// status st and a message holding inMessage.
func waitConditionMessage(t *testing.T, env *harness.Env, ns, name, typ string, st metav1.ConditionStatus, inMessage string) {
	t.Helper()
	var last *metav1.Condition
	harness.WaitFor(t, timeout, func() (bool, error) {
		pg, err := env.Client.SchedulingV1beta1().PodGroups(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = meta.FindStatusCondition(pg.Status.Conditions, typ)
		return last != nil && last.Status == st && strings.Contains(last.Message, inMessage), nil
	}, fmt.Sprintf("PodGroup %s/%s: condition %s %s naming %q", ns, name, typ, st, inMessage))
}

// TestUpstreamGangs starts one control plane serving scheduling.k8s.io/v1beta1,
// with the in-process kube-controller-manager for the Job row.
func TestUpstreamGangs(t *testing.T) {
	env := harness.StartWith(t, harness.WithUpstreamGangAPI(), harness.WithControllers())

	// The per-API table's rows, for upstream's PodGroups; among them the
	// done-when row: a gang held by its queue's capability, and a gang of
	// a starved queue reclaiming a whole gang.
	gangtable.Run(t, env, gangtable.Source{
		Name: "upstream",
		Queue: func(t *testing.T, name string, weight int32, cpu string) {
			queue(t, env, name, weight, cpu)
		},
		Group: func(t *testing.T, ns, name, q string, minMember int32, _ string) {
			group(t, env, ns, name, q, minMember, false)
		},
		Members:        members,
		StartScheduler: func(t *testing.T) { env.StartSchedulerProcess(t) },
	})

	t.Run("gang that fits is bound whole, with Caldera's conditions beside upstream's", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		env.StartSchedulerProcess(t)
		group(t, env, ns, "fits", "", 4, false)
		pods := env.CreatePods(t, members(ns, "fits", 4, "1")...)
		env.WaitBound(t, ns, timeout, gangtable.Names(pods)...)
		pg := waitCondition(t, env, ns, "fits", upstream.ConditionAdmitted, metav1.ConditionTrue)
		pg = waitCondition(t, env, ns, "fits", upstream.ConditionWaiting, metav1.ConditionFalse)
		// The barrier decision's evidence: kube-scheduler's PodGroup cycle
		// (which writes PodGroupInitiallyScheduled) did not run; Caldera's
		// Permit alone held and released the members.
		if c := meta.FindStatusCondition(pg.Status.Conditions, sched.PodGroupInitiallyScheduled); c != nil {
			t.Errorf("upstream's PodGroup cycle ran too: %+v", c)
		}
		if pg.Annotations[qapi.AdmittedAtAnnotation] == "" {
			t.Errorf("no %s annotation on the admitted PodGroup", qapi.AdmittedAtAnnotation)
		}
	})

	// The other side of the barrier decision: a scheduler whose own
	// GenericWorkload gate is on (in-process, it reads the gate the test
	// apiserver set in this process) runs kube-scheduler's GangScheduling
	// and PodGroup cycle; Caldera then leaves these pods to them as plain
	// pods, so upstream's barrier alone holds and releases the gang.
	t.Run("with the scheduler's GenericWorkload gate on, upstream's barrier alone holds the gang", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		env.StartScheduler(t, harness.WithFeatureGates("GenericWorkload=true"))
		group(t, env, ns, "theirs", "", 3, false)
		pods := members(ns, "theirs", 3, "1")
		env.CreatePods(t, pods[:2]...)
		env.ConsistentlyUnbound(t, ns, quiet)
		env.CreatePod(t, pods[2])
		env.WaitBound(t, ns, timeout, gangtable.Names(pods)...)
		pg := waitCondition(t, env, ns, "theirs", sched.PodGroupInitiallyScheduled, metav1.ConditionTrue)
		for _, typ := range []string{upstream.ConditionAdmitted, upstream.ConditionWaiting} {
			if c := meta.FindStatusCondition(pg.Status.Conditions, typ); c != nil {
				t.Errorf("Caldera treated the gang as its own: %+v", c)
			}
		}
	})

	// Sole-scheduler mode: pods that name no scheduler go to the shipped
	// default-scheduler profile, which with the scheduler's own gate off has
	// no upstream GangScheduling. Without a barrier of Caldera's there, the
	// members that fit bound at once and the rest waited for room the bound
	// ones held.
	t.Run("in sole mode, a gang of pods that name no scheduler is all-or-nothing", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.StartSchedulerProcess(t, harness.WithConfigFile(filepath.Join(env.RepoRoot, "manifests", "components", "sole-scheduler", "config.yaml")))
		group(t, env, ns, "nameless", "", 3, false)
		pods := members(ns, "nameless", 3, "2")
		for _, p := range pods {
			p.Spec.SchedulerName = ""
		}
		env.CreatePods(t, pods...)
		env.ConsistentlyUnbound(t, ns, quiet)
		env.AddNodes(t, 1, "4", "8Gi")
		env.WaitBound(t, ns, timeout, gangtable.Names(pods)...)
	})

	t.Run("a gang that waits for its members says so in its Waiting condition", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		env.StartSchedulerProcess(t)
		group(t, env, ns, "wait", "", 3, false)
		pods := members(ns, "wait", 3, "1")
		env.CreatePods(t, pods[:2]...)
		env.ConsistentlyUnbound(t, ns, quiet)
		pg := waitCondition(t, env, ns, "wait", upstream.ConditionWaiting, metav1.ConditionTrue)
		if c := meta.FindStatusCondition(pg.Status.Conditions, upstream.ConditionWaiting); !strings.Contains(c.Message, "minCount 3") {
			t.Errorf("Waiting condition %q, want it to name minCount 3", c.Message)
		}
		env.CreatePod(t, pods[2])
		env.WaitBound(t, ns, timeout, gangtable.Names(pods)...)
	})

	t.Run("the queue's verdict is in the Admitted condition", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		q := "cap-" + ns
		queue(t, env, q, 1, "4")
		env.StartSchedulerProcess(t)
		group(t, env, ns, "a", q, 2, false)
		a := env.CreatePods(t, members(ns, "a", 2, "1500m")...)
		env.WaitBound(t, ns, timeout, gangtable.Names(a)...)
		group(t, env, ns, "b", q, 2, false)
		b := env.CreatePods(t, members(ns, "b", 2, "1500m")...)
		ev := env.WaitEvent(t, ns, "b", "NotAdmitted", timeout)
		want := "queue " + q + ": cpu request 3 exceeds remaining capability 1"
		if ev.Note != want {
			t.Errorf("NotAdmitted note = %q, want %q", ev.Note, want)
		}
		env.ConsistentlyUnbound(t, ns, quiet, gangtable.Names(b)...)
		pg := waitCondition(t, env, ns, "b", upstream.ConditionAdmitted, metav1.ConditionFalse)
		if c := meta.FindStatusCondition(pg.Status.Conditions, upstream.ConditionAdmitted); c.Message != want {
			t.Errorf("Admitted condition message %q, want %q", c.Message, want)
		}
	})

	// An elastic gang of 8 with minCount 2 in a queue whose share is 4:
	// with disruptionMode single reclaim takes 2 members above minCount;
	// with all the gang is one victim of 8, which would take its queue
	// below its share, so nothing is reclaimed and the starved gang waits.
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprintf("reclaim from an elastic gang (disruptionMode all %v)", all), func(t *testing.T) {
			ns := env.Namespace(t)
			env.AddNodes(t, 2, "4", "16Gi")
			rich, starved := "rich-"+ns, "starved-"+ns
			queue(t, env, rich, 1, "")
			queue(t, env, starved, 1, "")
			env.StartSchedulerProcess(t)
			evicted := env.CountDeletions(t, ns)
			group(t, env, ns, "r", rich, 2, all)
			env.CreatePods(t, members(ns, "r", 8, "1")...)
			env.WaitBoundCount(t, ns, "", 8, timeout)
			group(t, env, ns, "s", starved, 2, false)
			s := env.CreatePods(t, members(ns, "s", 2, "1")...)
			want, left := 2, 6
			if all {
				want, left = 0, 8
				env.ConsistentlyUnbound(t, ns, 2*quiet, gangtable.Names(s)...)
			} else {
				env.WaitBound(t, ns, converge, gangtable.Names(s)...)
			}
			harness.WaitDeletions(t, evicted, want)
			if n := evicted(); n != want {
				t.Errorf("%d evictions, want %d", n, want)
			}
			if r := gangtable.Running(t, env, ns, "r"); r != left {
				t.Errorf("the rich gang runs %d members, want %d", r, left)
			}
		})
	}

	t.Run("basic policy: members are admitted one by one, no barrier", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		q := "basic-" + ns
		queue(t, env, q, 1, "3")
		env.StartSchedulerProcess(t)
		group(t, env, ns, "b", q, 0, false)
		pods := env.CreatePods(t, members(ns, "b", 4, "1")...)
		// Three fit the queue's capability, one by one; the fourth waits.
		env.WaitBoundCount(t, ns, "", 3, timeout)
		env.ConsistentlyUnbound(t, ns, quiet, gangtable.Names(pods)[3])
	})

	t.Run("an Indexed Job gets its PodGroup from the Job controller and Caldera queues it", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		q := "jobs-" + ns
		queue(t, env, q, 1, "4")
		env.StartSchedulerProcess(t)
		job := func(name string) *batchv1.Job {
			pod := harness.Pod(ns, "").CPU("1").Obj()
			return &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: batchv1.JobSpec{
					Parallelism: ptr.To[int32](3), Completions: ptr.To[int32](3),
					CompletionMode: ptr.To(batchv1.IndexedCompletion),
					// A gang; minCount defaults to parallelism. Without
					// it the Job controller makes a basic PodGroup.
					Scheduling: &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedalpha.WorkloadPodGroupSchedulingPolicy{
						Gang: &schedalpha.WorkloadPodGroupGangSchedulingPolicy{}}},
					Template: v1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{qapi.QueueLabel: q}},
						Spec:       pod.Spec,
					},
				},
			}
		}
		for _, name := range []string{"first", "second"} {
			j := job(name)
			j.Spec.Template.Spec.RestartPolicy = v1.RestartPolicyNever
			if _, err := env.Client.BatchV1().Jobs(ns).Create(t.Context(), j, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = env.Client.BatchV1().Jobs(ns).Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			})
			if name == "first" {
				env.WaitBoundCount(t, ns, "", 3, timeout)
			}
		}
		var pgs *sched.PodGroupList
		for deadline := time.Now().Add(timeout); ; {
			var err error
			if pgs, err = env.Client.SchedulingV1beta1().PodGroups(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if len(pgs.Items) == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d PodGroups, want one per Job from the Job controller", len(pgs.Items))
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, pg := range pgs.Items {
			if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 3 {
				t.Errorf("PodGroup %s policy %+v, want a gang of 3", pg.Name, pg.Spec.SchedulingPolicy)
			}
			if owner := metav1.GetControllerOf(&pg); owner != nil && owner.Name == "second" {
				// The queue holds 4 cpu: the second Job's gang of 3 waits
				// whole, refused by the queue's capability.
				// Written before the pass has judged it, the condition says
				// only that it waits for its queue; the verdict follows.
				waitConditionMessage(t, env, ns, pg.Name, upstream.ConditionAdmitted, metav1.ConditionFalse, "capability")
			}
		}
		env.WaitBoundCount(t, ns, "", 3, timeout)
	})
}
