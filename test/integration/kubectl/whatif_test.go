package kubectl_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/caldera-sched/caldera/internal/kubectlcaldera"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/runlimit"
	"github.com/caldera-sched/caldera/pkg/status"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// gangJob is a job of the what-if tests: a PodGroup and its members.
type gangJob struct {
	pg   *v1alpha1.PodGroup
	pods []*v1.Pod
}

// newGang is gang name of n members of cpu each in queue (none when ""),
// at priority prio (none when 0).
func newGang(ns, name, queue string, n int, cpu string, prio int32) gangJob {
	pg := harness.PodGroup(ns, name, int32(n))
	if queue != "" {
		pg.Labels = map[string]string{qapi.QueueLabel: queue}
	}
	var pods []*v1.Pod
	for i := range n {
		b := harness.Pod(ns, name+"-"+string(rune('0'+i))).CPU(cpu).Group(name)
		if prio != 0 {
			b = b.Priority(prio)
		}
		pods = append(pods, b.Obj())
	}
	return gangJob{pg: pg, pods: pods}
}

// submit creates the job as a user would.
func (j gangJob) submit(t *testing.T, env *harness.Env) {
	t.Helper()
	env.CreatePodGroup(t, j.pg)
	for _, p := range j.pods {
		env.CreatePod(t, p)
	}
}

// file writes the job as the YAML a user hands what-if.
func (j gangJob) file(t *testing.T) string {
	t.Helper()
	pg := j.pg.DeepCopy()
	pg.TypeMeta = metav1.TypeMeta{Kind: "PodGroup", APIVersion: v1alpha1.SchemeGroupVersion.String()}
	docs := []any{pg}
	for _, p := range j.pods {
		p = p.DeepCopy()
		p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		docs = append(docs, p)
	}
	var parts []string
	for _, d := range docs {
		data, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(data))
	}
	path := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(parts, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// whatIf runs what-if for job as a user would, against the scheduler's own
// configuration file, and checks that the exit status agrees with the answer.
func whatIf(t *testing.T, env *harness.Env, sched *harness.Scheduler, ns string, job gangJob) kubectlcaldera.WhatIfResult {
	t.Helper()
	out, err := run(t, env, "what-if", "-f", job.file(t), "-n", ns, "--config", sched.ConfigFile, "-o", "json")
	if err != nil && !errors.Is(err, kubectlcaldera.ErrWouldNotStart) {
		t.Fatalf("what-if: %v\n%s", err, out)
	}
	var r kubectlcaldera.WhatIfResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("what-if -o json is not JSON: %v\n%s", err, out)
	}
	if len(r.Units) != 1 || len(r.Units[0].Pods) != len(job.pods) {
		t.Fatalf("what-if: units %+v, want the one gang of %d pods", r.Units, len(job.pods))
	}
	if r.Starts != (err == nil) {
		t.Errorf("what-if: starts %v but the command returned %v", r.Starts, err)
	}
	table, _ := run(t, env, "what-if", "-f", job.file(t), "-n", ns, "--config", sched.ConfigFile, "--explain")
	t.Logf("what-if --explain:\n%s", table)
	return r
}

// waitVerdict waits until every pod of job waits for admission with
// want as its PodScheduled message: what the scheduler decided.
// A refusal for want of room (the cluster, placement or reservation checks) is told by
// the scheduler's cycles, as Unschedulable for autoscalers; any other by
// Caldera's WaitingForAdmission.
func waitVerdict(t *testing.T, env *harness.Env, job gangJob, check, want string) {
	t.Helper()
	reason := status.ReasonWaitingForAdmission
	if check == "Cluster" || check == "Placement" || check == "Reservation" {
		reason, want = v1.PodReasonUnschedulable, "waiting for room: "+want
	}
	for _, p := range job.pods {
		harness.WaitFor(t, timeout, func() (bool, error) {
			got, err := env.Client.CoreV1().Pods(p.Namespace).Get(t.Context(), p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				// The scheduler wraps a PreFilter's message ("0/2 nodes
				// are available: ...").
				if c.Type == v1.PodScheduled && c.Reason == reason && (c.Message == want || reason == v1.PodReasonUnschedulable && strings.Contains(c.Message, want)) {
					return true, nil
				}
			}
			return false, nil
		}, p.Name+" to wait for admission with what-if's verdict "+want)
	}
}

// TestWhatIf: what-if's answer for a job agrees with what the scheduler
// then does with the same job, in each way a job starts or waits. Each
// case has a control plane of its own.
func TestWhatIf(t *testing.T) {
	cpu := func(q string) v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)} }
	cases := []struct {
		name string
		// setup builds the cluster the job meets, and returns the job.
		setup func(t *testing.T, env *harness.Env, ns string) gangJob
		// check asserts what-if's answer.
		check func(t *testing.T, u kubectlcaldera.WhatIfUnit)
		// admitted: the scheduler then runs the job (else it waits with
		// what-if's verdict).
		admitted bool
		// noPlan: admitted on a plan's room that no plan frees: the
		// scheduler then reports that no eviction helps, and the job waits.
		noPlan bool
		// live asserts the live plan's reservations what-if reports
		// (nil: there are none).
		live func(t *testing.T, env *harness.Env, ns string, r kubectlcaldera.WhatIfResult)
	}{{
		name: "admitted now",
		setup: func(t *testing.T, env *harness.Env, ns string) gangJob {
			env.AddNodes(t, 1, "4", "8Gi")
			return newGang(ns, "fits", "", 2, "1", 0)
		},
		check: func(t *testing.T, u kubectlcaldera.WhatIfUnit) {
			if !u.Admitted || u.OnPlan || u.Position != 1 || u.Queue != "default" {
				t.Errorf("what-if: %+v, want admitted at position 1 in default without a plan", u)
			}
		},
		admitted: true,
	}, {
		name: "blocked by capability",
		setup: func(t *testing.T, env *harness.Env, ns string) gangJob {
			env.AddNodes(t, 1, "4", "8Gi")
			env.CreateQueue(t, "small", qapi.QueueSpec{Weight: 1, Capability: cpu("2")})
			return newGang(ns, "big", "small", 3, "1", 0)
		},
		check: func(t *testing.T, u kubectlcaldera.WhatIfUnit) {
			if u.Admitted || u.Check != "Capability" || !strings.Contains(u.Message, "queue small: cpu request 3 exceeds capability 2") {
				t.Errorf("what-if: %+v, want refused for small's capability", u)
			}
		},
	}, {
		name: "blocked by fair share",
		setup: func(t *testing.T, env *harness.Env, ns string) gangJob {
			env.AddNodes(t, 1, "4", "8Gi")
			env.CreateQueue(t, "a", qapi.QueueSpec{Weight: 1})
			env.CreateQueue(t, "b", qapi.QueueSpec{Weight: 1})
			for _, g := range []gangJob{newGang(ns, "a1", "a", 2, "1", 0), newGang(ns, "b1", "b", 2, "1", 0)} {
				g.submit(t, env)
				env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"="+g.pg.Name, 2, timeout)
			}
			return newGang(ns, "a2", "a", 2, "1", 0)
		},
		check: func(t *testing.T, u kubectlcaldera.WhatIfUnit) {
			if u.Admitted || u.Check != "Fairness" {
				t.Errorf("what-if: %+v, want refused for a's deserved share", u)
			}
		},
	}, {
		name: "needs reclaim",
		setup: func(t *testing.T, env *harness.Env, ns string) gangJob {
			env.AddNodes(t, 1, "4", "8Gi")
			env.CreateQueue(t, "a", qapi.QueueSpec{Weight: 1})
			env.CreateQueue(t, "b", qapi.QueueSpec{Weight: 1})
			for _, name := range []string{"a1", "a2"} {
				newGang(ns, name, "a", 2, "1", 0).submit(t, env)
				env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"="+name, 2, timeout)
			}
			return newGang(ns, "b1", "b", 2, "1", 0)
		},
		check: func(t *testing.T, u kubectlcaldera.WhatIfUnit) {
			if !u.Admitted || !u.OnPlan || u.Queue != "b" || u.Plan == nil || u.Plan.Action != "reclaim" || len(u.Plan.Victims) != 2 {
				t.Errorf("what-if: %+v (plan %+v), want admitted to b on a reclaim plan evicting one of a's gangs", u, u.Plan)
			}
		},
		admitted: true,
	}, {
		// Queue a holds the node with one gang of 4 above its deserved
		// share of 2: admission counts the 2 as room reclaim frees, but
		// evicting 2 of the gang would break it and all 4 would take a
		// below its share, so no plan can be made and b1 waits.
		name: "admitted on room no plan frees",
		setup: func(t *testing.T, env *harness.Env, ns string) gangJob {
			env.AddNodes(t, 1, "4", "8Gi")
			env.CreateQueue(t, "a", qapi.QueueSpec{Weight: 1})
			env.CreateQueue(t, "b", qapi.QueueSpec{Weight: 1})
			newGang(ns, "a1", "a", 4, "1", 0).submit(t, env)
			env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=a1", 4, timeout)
			return newGang(ns, "b1", "b", 2, "1", 0)
		},
		check: func(t *testing.T, u kubectlcaldera.WhatIfUnit) {
			if !u.Admitted || !u.OnPlan || u.Plan == nil || u.Plan.Action != "" || !strings.Contains(u.Plan.Why, "no reclaim") {
				t.Errorf("what-if: %+v (plan %+v), want admitted on a plan that cannot be made", u, u.Plan)
			}
		},
		admitted: true,
		noPlan:   true,
	}, {
		name: "needs preemption",
		setup: func(t *testing.T, env *harness.Env, ns string) gangJob {
			env.AddNodes(t, 1, "4", "8Gi")
			low := newGang(ns, "low", "", 4, "1", 1)
			low.submit(t, env)
			env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=low", 4, timeout)
			env.EnsurePriorityClass(t, 100)
			return newGang(ns, "high", "", 2, "1", 100)
		},
		check: func(t *testing.T, u kubectlcaldera.WhatIfUnit) {
			if !u.Admitted || !u.OnPlan || u.Plan == nil || u.Plan.Action != "preempt" || len(u.Plan.Victims) != 4 {
				t.Errorf("what-if: %+v (plan %+v), want admitted on a preemption plan evicting the whole low gang", u, u.Plan)
			}
		},
		admitted: true,
	}, {
		name: "infeasible on the nodes",
		setup: func(t *testing.T, env *harness.Env, ns string) gangJob {
			env.AddNodes(t, 2, "2", "8Gi")
			return newGang(ns, "wide", "", 1, "3", 0)
		},
		check: func(t *testing.T, u kubectlcaldera.WhatIfUnit) {
			if u.Admitted || u.Check != "Placement" || !strings.Contains(u.Message, "0/1") {
				t.Errorf("what-if: %+v, want refused: 0/1 members placeable", u)
			}
		},
	}, {
		// The live scheduler keeps train (queue low) reserved from r0's
		// end on n0 and n2; an unbounded pod of urgent, a queue a pass
		// visits before low, fits n2 now but would hold it past then.
		// A fresh pass would place it before reaching train: what-if
		// plans the live reservation first, as the scheduler does.
		name:  "delays a live reservation",
		setup: reservedBehindLimits,
		check: func(t *testing.T, u kubectlcaldera.WhatIfUnit) {
			if u.Admitted || u.Check != "Reservation" || !strings.Contains(u.Message, "starting now would delay the reservation of pg:") {
				t.Errorf("what-if: %+v, want refused for delaying train's reservation", u)
			}
		},
		live: func(t *testing.T, env *harness.Env, ns string, r kubectlcaldera.WhatIfResult) {
			// The scheduler's plan as it published it: what-if was held
			// to it, and planned it the same.
			at := expectedStart(t, env, ns, "train")
			if len(r.Reservations) != 1 {
				t.Fatalf("what-if's live reservations %+v, want train's", r.Reservations)
			}
			lr := r.Reservations[0]
			if lr.Unit != "pg:"+ns+"/train" || !lr.Honoured || !lr.LiveStart.Equal(at) || len(lr.LiveNodes) != 2 ||
				lr.Start == nil || !lr.Start.Equal(at) || !slices.Equal(slices.Sorted(slices.Values(lr.Nodes)), slices.Sorted(slices.Values(lr.LiveNodes))) {
				t.Errorf("what-if's live reservation %+v (start %v), want train's honoured, from %v on the nodes the scheduler named", lr, lr.Start, at)
			}
			if msg := r.Units[0].Message; !strings.Contains(msg, "pg:"+ns+"/train from "+at.UTC().Format(time.RFC3339)) {
				t.Errorf("what-if's verdict %q does not name train's reservation from %v", msg, at)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := harness.Start(t)
			sched := env.StartScheduler(t)
			ns := env.Namespace(t)
			job := tc.setup(t, env, ns)
			r := whatIf(t, env, sched, ns, job)
			u := r.Units[0]
			tc.check(t, u)
			if tc.live != nil {
				tc.live(t, env, ns, r)
			} else if len(r.Reservations) != 0 {
				t.Errorf("what-if reports live reservations %+v where the scheduler holds none", r.Reservations)
			}
			if u.Admitted != tc.admitted {
				t.Fatalf("what-if admitted %v, want %v", u.Admitted, tc.admitted)
			}
			before := podNames(t, env, ns)
			job.submit(t, env)
			if tc.noPlan {
				waitUnschedulable(t, env, job, u.Plan.Why)
				checkVictims(t, env, ns, before, nil)
				return
			}
			if tc.admitted {
				env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"="+job.pg.Name, len(job.pods), timeout)
				var victims []string
				if u.Plan != nil {
					victims = u.Plan.Victims
				}
				checkVictims(t, env, ns, before, victims)
				return
			}
			waitVerdict(t, env, job, u.Check, u.Message)
		})
	}
}

// waitUnschedulable waits until job's first pod was found unschedulable
// with a message naming why, as the scheduler's PostFilter says it: in
// its FailedScheduling Event, which stays (the condition does not: the
// gang is then released, and refused for want of room, which the next
// cycles say instead).
func waitUnschedulable(t *testing.T, env *harness.Env, job gangJob, why string) {
	t.Helper()
	p := job.pods[0]
	harness.WaitFor(t, timeout, func() (bool, error) {
		evs, err := env.Client.CoreV1().Events(p.Namespace).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && strings.Contains(e.Message, why) {
				return true, nil
			}
		}
		return false, nil
	}, p.Name+" to be unschedulable with what-if's reason "+why)
}

// podNames is the names (namespace/name) of ns's pods not being deleted.
func podNames(t *testing.T, env *harness.Env, ns string) map[string]bool {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			names[p.Namespace+"/"+p.Name] = true
		}
	}
	return names
}

// checkVictims asserts that the pods the scheduler evicted in ns (those of
// before that are gone) are exactly the ones what-if named.
func checkVictims(t *testing.T, env *harness.Env, ns string, before map[string]bool, victims []string) {
	t.Helper()
	left := podNames(t, env, ns)
	var gone []string
	for name := range before {
		if !left[name] {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	want := slices.Clone(victims)
	slices.Sort(want)
	if !slices.Equal(gone, want) {
		t.Errorf("the scheduler evicted %v; what-if named %v", gone, want)
	}
}

// reservedBehindLimits: three 4-cpu nodes; n0 and n1 run pods of queue low
// that declare 600 s and 1200 s (max-run-seconds), n2 is empty. Gang train
// (low, two 4-cpu members) fits nowhere now and is reserved from r0's end
// on n0 and n2; it waits until the scheduler has published that. The job
// is a one-pod gang without a limit in urgent (priority 10): it fits n2.
func reservedBehindLimits(t *testing.T, env *harness.Env, ns string) gangJob {
	nodes := env.AddNodes(t, 3, "4", "16Gi")
	env.CreateQueue(t, "low", qapi.QueueSpec{Weight: 1})
	env.CreateQueue(t, "urgent", qapi.QueueSpec{Weight: 1, Priority: 10})
	for i, seconds := range []int{600, 1200} {
		name := fmt.Sprint("r", i)
		p := harness.Pod(ns, name).CPU("4").Labels(map[string]string{qapi.QueueLabel: "low"}).Obj()
		p.Annotations = map[string]string{runlimit.Annotation: fmt.Sprint(seconds)}
		p.Spec.NodeName = nodes[i].Name
		env.CreatePod(t, p)
		env.SetPodPhase(t, ns, name, v1.PodRunning)
	}
	newGang(ns, "train", "low", 2, "4", 0).submit(t, env)
	harness.WaitFor(t, timeout, func() (bool, error) {
		pg, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), "train", metav1.GetOptions{})
		return err == nil && pg.Annotations[qapi.ExpectedStartAnnotation] != "", err
	}, "train's expected start")
	return newGang(ns, "endless", "urgent", 1, "4", 0)
}

// expectedStart is PodGroup ns/name's expected start, as the scheduler
// published it.
func expectedStart(t *testing.T, env *harness.Env, ns, name string) time.Time {
	t.Helper()
	pg, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339, pg.Annotations[qapi.ExpectedStartAnnotation])
	if err != nil {
		t.Fatalf("PodGroup %s/%s: expected start: %v", ns, name, err)
	}
	return at
}
