// Package vcjob_test runs Volcano's own job controller (vc-controller-manager
// of the release test/neighbours/volcano pins, built from Volcano's Go
// module) against a real kube-apiserver with that release's CRDs and the
// real Caldera scheduler serving the "volcano" scheduler name, as
// docs/migrating-from-volcano.md tells a Volcano user to run it. vcjobs are
// written with the defaults Volcano's admission webhook would fill in
// (queue, minAvailable, each task's minAvailable, schedulerName), since no
// webhook runs here. Nothing plays the controller's part: it creates the
// PodGroups (minResources in its quota form), waits for Inqueue, creates
// the pods and reads their phases into the job's status.
package vcjob_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/caldera-sched/caldera/pkg/status"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

const timeout = 60 * time.Second

// podGroups is Volcano's PodGroup resource, read here without Caldera's
// types where a field they do not know matters.
var podGroups = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}

// volcanoAlias serves the "volcano" scheduler name with a copy of the batch
// profile, as the chart's volcano.schedulerName does.
func volcanoAlias(cfg map[string]any) error {
	profiles := cfg["profiles"].([]any)
	alias := maps.Clone(profiles[0].(map[string]any))
	alias["schedulerName"] = "volcano"
	cfg["profiles"] = append(profiles, alias)
	return nil
}

// task is one task of a vcjob: replicas pods of cpu each, minAvailable of
// them needed to start.
type task struct {
	name           string
	replicas, min  int32
	cpu            string
	restartOnFails bool
}

// job is a vcjob as Volcano's webhook would leave it: schedulerName,
// queue, minAvailable (the sum of the tasks' unless given) and each task's
// minAvailable written out.
func job(ns, name, queue string, minAvailable int32, tasks ...task) *batch.Job {
	j := &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batch.JobSpec{
			SchedulerName: "volcano",
			Queue:         queue,
			MinAvailable:  minAvailable,
			MaxRetry:      3,
		},
	}
	var sum int32
	for _, tk := range tasks {
		sum += tk.min
		ts := batch.TaskSpec{
			Name:         tk.name,
			Replicas:     tk.replicas,
			MinAvailable: ptr.To(tk.min),
			MaxRetry:     3,
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{
				RestartPolicy: v1.RestartPolicyNever,
				Containers: []v1.Container{{Name: "main", Image: "busybox",
					Resources: v1.ResourceRequirements{
						Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(tk.cpu), v1.ResourceMemory: resource.MustParse("128Mi")},
						Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(tk.cpu), v1.ResourceMemory: resource.MustParse("128Mi")},
					}}},
			}},
		}
		if tk.restartOnFails {
			ts.Policies = []batch.LifecyclePolicy{{Event: "PodFailed", Action: "RestartJob"}}
		}
		j.Spec.Tasks = append(j.Spec.Tasks, ts)
	}
	if j.Spec.MinAvailable == 0 {
		j.Spec.MinAvailable = sum
	}
	return j
}

// podNames are the pods Volcano's controller makes for j: <job>-<task>-<i>.
func podNames(j *batch.Job) []string {
	var out []string
	for _, tk := range j.Spec.Tasks {
		for i := range tk.Replicas {
			out = append(out, fmt.Sprintf("%s-%s-%d", j.Name, tk.Name, i))
		}
	}
	return out
}

type world struct {
	env *harness.Env
	vcc vcclient.Interface
}

func (w world) createJob(t *testing.T, j *batch.Job) time.Time {
	t.Helper()
	began := time.Now()
	if _, err := w.vcc.BatchV1alpha1().Jobs(j.Namespace).Create(t.Context(), j, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating vcjob %s: %v", j.Name, err)
	}
	return began
}

func (w world) createQueue(t *testing.T, name string, weight int32, capability v1.ResourceList) {
	t.Helper()
	q := &vc.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: vc.QueueSpec{Weight: weight, Capability: capability, Reclaimable: ptr.To(true)}}
	if _, err := w.vcc.SchedulingV1beta1().Queues().Create(t.Context(), q, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Volcano Queue %s: %v", name, err)
	}
	t.Cleanup(func() { _ = w.vcc.SchedulingV1beta1().Queues().Delete(t.Context(), name, metav1.DeleteOptions{}) })
}

// waitJob waits until vcjob ns/name satisfies ok.
func (w world) waitJob(t *testing.T, ns, name, what string, ok func(*batch.Job) bool) *batch.Job {
	t.Helper()
	var last *batch.Job
	harness.WaitFor(t, timeout, func() (bool, error) {
		j, err := w.vcc.BatchV1alpha1().Jobs(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = j
		return ok(j), nil
	}, fmt.Sprintf("vcjob %s/%s: %s", ns, name, what))
	return last
}

func jobPhase(p batch.JobPhase) func(*batch.Job) bool {
	return func(j *batch.Job) bool { return j.Status.State.Phase == p }
}

// podGroupOf returns the PodGroup Volcano's controller made for j
// (<job>-<job uid>).
func (w world) podGroupOf(t *testing.T, ns, name string) *vc.PodGroup {
	t.Helper()
	list, err := w.vcc.SchedulingV1beta1().PodGroups(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if strings.HasPrefix(list.Items[i].Name, name+"-") {
			return &list.Items[i]
		}
	}
	return nil
}

// waitPodGroup waits until the PodGroup of vcjob name satisfies ok.
func (w world) waitPodGroup(t *testing.T, ns, name, what string, ok func(*vc.PodGroup) bool) *vc.PodGroup {
	t.Helper()
	var last *vc.PodGroup
	harness.WaitFor(t, timeout, func() (bool, error) {
		last = w.podGroupOf(t, ns, name)
		return last != nil && ok(last), nil
	}, fmt.Sprintf("PodGroup of vcjob %s/%s: %s", ns, name, what))
	return last
}

// finish sets every pod of names to phase, as a kubelet would.
func (w world) finish(t *testing.T, ns string, phase v1.PodPhase, names ...string) {
	t.Helper()
	for _, n := range names {
		w.env.SetPodPhase(t, ns, n, phase)
	}
}

// pendingWarnings counts the Warning PodGroupPending Events on vcjob name.
func (w world) pendingWarnings(t *testing.T, ns, name string) int {
	n := 0
	for _, ev := range w.env.Events(t, ns, name) {
		if ev.Reason == string(batch.PodGroupPending) {
			n++
		}
	}
	return n
}

func TestVolcanoJobController(t *testing.T) {
	// Kubernetes' garbage collector deletes a deleted vcjob's pods, as in
	// a real cluster: Volcano's controllers leave that to it.
	env := harness.StartWith(t, harness.WithVolcanoRelease(), harness.WithControllers("garbage-collector-controller"))
	w := world{env: env, vcc: vcclient.NewForConfigOrDie(status.CRDConfig(env.Config))}
	env.StartVolcanoController(t)
	env.StartScheduler(t, harness.WithConfigEdit(volcanoAlias))

	t.Run("a 4-pod gang job runs and completes", w.gangJobCompletes)
	t.Run("examples/volcano/vcjob.yaml runs in Volcano's default queue, which Caldera creates as volcano-scheduler does", w.exampleInDefaultQueue)
	t.Run("a job too big for the queue waits Pending while a small one runs", w.bigJobWaits)
	t.Run("an elastic job starts at minAvailable and grows into free room", w.elasticJobGrows)
	t.Run("queues weighted 1:3 share a full cluster 8:24", w.weightedQueues)
	t.Run("RestartJob on a failed pod: the PodGroup made again is a new gang, not Running on the old pods", w.restartJob)
	t.Run("a status write keeps the fields Caldera's Volcano types do not know", w.statusKeepsNewerFields)
	t.Run("a refused gang's status is written once per verdict, not per moving number", w.verdictWrittenOnce)
	t.Run("deleting a running job gives its queue's room to the job behind it", w.jobDeleted)
	t.Run("a job whose pods name a scheduler nobody serves gives its queue's room back and says why", w.unservedScheduler)
	t.Run("minTaskMember: four workers never start without their master", w.taskMinimums)
	t.Run("a gang job reserved behind a job with a limit starts at its expected start, a shorter job backfills", w.reservedJobStarts)
}

// logPodGroups logs every PodGroup of ns with its phase and conditions.
func (w world) logPodGroups(t *testing.T, ns string) {
	list, err := w.vcc.SchedulingV1beta1().PodGroups(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Logf("listing PodGroups: %v", err)
		return
	}
	for _, pg := range list.Items {
		var conds []string
		for _, c := range pg.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s %s %q", c.Type, c.Status, c.Reason, c.Message))
		}
		t.Logf("PodGroup %s: %s, running %d, %v", pg.Name, pg.Status.Phase, pg.Status.Running, conds)
	}
}

// hasTrue reports whether pg has a True condition of typ whose message
// holds inMessage.
func hasTrue(pg *vc.PodGroup, typ vc.PodGroupConditionType, inMessage string) bool {
	for _, c := range pg.Status.Conditions {
		if c.Type == typ && c.Status == v1.ConditionTrue && strings.Contains(c.Message, inMessage) {
			return true
		}
	}
	return false
}

func (w world) gangJobCompletes(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 2, "4", "8Gi")
	w.createQueue(t, "q-"+ns, 1, nil)
	j := job(ns, "gang", "q-"+ns, 0, task{name: "worker", replicas: 4, min: 4, cpu: "1"})
	began := w.createJob(t, j)
	names := podNames(j)
	w.env.WaitBound(t, ns, timeout, names...)
	t.Logf("vcjob created to all %d pods bound: %v", len(names), time.Since(began).Round(10*time.Millisecond))
	pg := w.podGroupOf(t, ns, j.Name)
	if pg == nil || pg.Spec.MinResources == nil {
		t.Fatalf("PodGroup of %s: %+v, want one with the controller's minResources", j.Name, pg)
	}
	if _, quota := (*pg.Spec.MinResources)["count/pods"]; !quota {
		t.Logf("note: the controller's minResources carry no count/pods: %v", *pg.Spec.MinResources)
	}
	w.finish(t, ns, v1.PodRunning, names...)
	w.waitJob(t, ns, j.Name, "Running", jobPhase(batch.Running))
	w.finish(t, ns, v1.PodSucceeded, names...)
	w.waitJob(t, ns, j.Name, "Completed", jobPhase(batch.Completed))
	if n := w.pendingWarnings(t, ns, j.Name); n != 0 {
		t.Errorf("%d Warning PodGroupPending Events on the vcjob, want none", n)
	}
}

func (w world) exampleInDefaultQueue(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 1, "8", "16Gi")
	data, err := os.ReadFile(filepath.Join(w.env.RepoRoot, "examples", "volcano", "vcjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	j := &batch.Job{}
	if err := yaml.UnmarshalStrict(data, j); err != nil {
		t.Fatalf("examples/volcano/vcjob.yaml: %v", err)
	}
	j.Namespace = ns
	began := w.createJob(t, j)
	names := podNames(j)
	w.env.WaitBound(t, ns, timeout, names...)
	t.Logf("vcjob %s in queue %s created to all %d pods bound: %v", j.Name, j.Spec.Queue, len(names), time.Since(began).Round(10*time.Millisecond))
	w.finish(t, ns, v1.PodSucceeded, names...)
	w.waitJob(t, ns, j.Name, "Completed", jobPhase(batch.Completed))
}

func (w world) bigJobWaits(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 2, "4", "8Gi")
	q := "cap-" + ns
	w.createQueue(t, q, 1, v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")})
	big := job(ns, "big", q, 0, task{name: "worker", replicas: 6, min: 6, cpu: "1"})
	small := job(ns, "small", q, 0, task{name: "worker", replicas: 2, min: 2, cpu: "1"})
	w.createJob(t, big)
	w.createJob(t, small)
	w.env.WaitBound(t, ns, timeout, podNames(small)...)
	w.waitJob(t, ns, big.Name, "Pending", jobPhase(batch.Pending))
	harness.WaitFor(t, timeout, func() (bool, error) {
		pg := w.podGroupOf(t, ns, big.Name)
		return pg != nil && pg.Status.Phase == vc.PodGroupPending && hasTrue(pg, vc.PodGroupUnschedulableType, "capability"), nil
	}, "big's PodGroup Pending with an Unschedulable condition naming the capability")
	pods, err := w.env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, "big-") {
			t.Errorf("pod %s exists: the controller created pods of a job that was never Inqueue", p.Name)
		}
	}
	// The queue's counts are its PodGroups by phase, as vcctl counts them.
	harness.WaitFor(t, timeout, func() (bool, error) {
		vq, err := w.vcc.SchedulingV1beta1().Queues().Get(t.Context(), q, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := vq.Status
		return s.Pending == 1 && s.Running == 1 && s.Inqueue == 0 && s.Completed == 0, nil
	}, "Volcano Queue "+q+" status: 1 pending (big), 1 running (small)")
}

func (w world) elasticJobGrows(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 1, "4", "8Gi")
	q := "el-" + ns
	w.createQueue(t, q, 1, nil)
	// Another gang holds 2 of the node's 4 cpu: the elastic job's
	// minimum (2) fits, its other 2 pods wait for room.
	hold := job(ns, "hold", q, 0, task{name: "w", replicas: 2, min: 2, cpu: "1"})
	w.createJob(t, hold)
	w.env.WaitBound(t, ns, timeout, podNames(hold)...)
	el := job(ns, "elastic", q, 2, task{name: "w", replicas: 4, min: 2, cpu: "1"})
	began := w.createJob(t, el)
	names := podNames(el)
	harness.WaitFor(t, timeout, func() (bool, error) {
		return w.env.BoundPods(t, ns, "") == 4, nil
	}, "hold's 2 pods and elastic's minimum of 2 bound")
	t.Logf("elastic vcjob created to its minimum bound: %v", time.Since(began).Round(10*time.Millisecond))
	w.finish(t, ns, v1.PodSucceeded, podNames(hold)...)
	w.env.WaitBound(t, ns, timeout, names...)
}

func (w world) weightedQueues(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 4, "8", "32Gi")
	light, heavy := "light-"+ns, "heavy-"+ns
	w.createQueue(t, light, 1, nil)
	w.createQueue(t, heavy, 3, nil)
	// The controller creates the PodGroups in its own order, so one
	// queue may be admitted past its share before the other's jobs
	// exist; Caldera then reclaims. The harness runs no kubelet:
	// this finishes the victims' termination as one would.
	evictions := w.env.CountDeletions(t, ns)
	began := time.Now()
	for i := range 8 {
		for _, q := range []string{heavy, light} {
			w.createJob(t, job(ns, fmt.Sprintf("%s-%d", q[:5], i), q, 0, task{name: "w", replicas: 4, min: 4, cpu: "1"}))
		}
	}
	count := func(prefix string) int {
		pods, err := w.env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Name, prefix) && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	var l, h int
	defer func() {
		if t.Failed() {
			t.Logf("bound at the end: light %d, heavy %d", l, h)
			w.logPodGroups(t, ns)
		}
	}()
	harness.WaitFor(t, timeout, func() (bool, error) {
		l, h = count("light"), count("heavy")
		return l == 8 && h == 24, nil
	}, "light 8 cpu and heavy 24 cpu bound")
	t.Logf("16 vcjobs created to light 8 / heavy 24 bound: %v, %d pods evicted on the way", time.Since(began).Round(10*time.Millisecond), evictions())
	// What vcctl shows: each queue's PodGroups by phase (asserted in
	// bigJobWaits).
	for _, q := range []string{light, heavy} {
		vq, err := w.vcc.SchedulingV1beta1().Queues().Get(t.Context(), q, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Queue %s status: pending %d, inqueue %d, running %d", q, vq.Status.Pending, vq.Status.Inqueue, vq.Status.Running)
	}
}

func (w world) restartJob(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 1, "4", "8Gi")
	j := job(ns, "restart", "default", 0, task{name: "w", replicas: 2, min: 2, cpu: "1", restartOnFails: true})
	w.createJob(t, j)
	names := podNames(j)
	w.env.WaitBound(t, ns, timeout, names...)
	w.finish(t, ns, v1.PodRunning, names...)
	first := w.waitPodGroup(t, ns, j.Name, "Running", func(pg *vc.PodGroup) bool { return pg.Status.Phase == vc.PodGroupRunning })
	w.finish(t, ns, v1.PodFailed, names[0])
	// The controller deletes the pods (they terminate: no kubelet
	// finishes them here) and makes the PodGroup again.
	renewed := w.waitPodGroup(t, ns, j.Name, "made again", func(pg *vc.PodGroup) bool {
		return pg.UID != first.UID && pg.Status.Phase != ""
	})
	if renewed.Status.Phase == vc.PodGroupRunning || renewed.Status.Running > 0 {
		t.Errorf("the PodGroup made again: %s with %d running, while its old pods terminate", renewed.Status.Phase, renewed.Status.Running)
	}
	w.env.FinishTerminating(t, ns)
	w.env.WaitBound(t, ns, timeout, names...)
}

func (w world) statusKeepsNewerFields(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 1, "4", "8Gi")
	// spec.subGroupPolicy is newer than the volcano.sh/apis Caldera
	// builds with; the release's CRD keeps it.
	policy := []any{map[string]any{"name": "workers", "subGroupSize": int64(2), "matchLabelKeys": []any{"role"}}}
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"namespace": ns, "name": "newer"},
		"spec":     map[string]any{"minMember": int64(1), "subGroupPolicy": policy},
	}}
	res := w.env.Dynamic.Resource(podGroups).Namespace(ns)
	if _, err := res.Create(t.Context(), pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *unstructured.Unstructured
	harness.WaitFor(t, timeout, func() (bool, error) {
		var err error
		got, err = res.Get(t.Context(), "newer", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		return phase == string(vc.PodGroupInqueue), nil
	}, "PodGroup newer Inqueue")
	// The CRD defaults minSubGroups to 0; what was written is kept.
	kept, _, _ := unstructured.NestedSlice(got.Object, "spec", "subGroupPolicy")
	if len(kept) != 1 {
		t.Fatalf("spec.subGroupPolicy after Caldera's status write: %v, want %v", kept, policy)
	}
	entry, _ := kept[0].(map[string]any)
	for k, v := range policy[0].(map[string]any) {
		if !equality.Semantic.DeepEqual(entry[k], v) {
			t.Errorf("spec.subGroupPolicy[0].%s after Caldera's status write: %v, want %v", k, entry[k], v)
		}
	}
}

func (w world) verdictWrittenOnce(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 2, "8", "16Gi")
	q := "moving-" + ns
	w.createQueue(t, q, 1, v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")})
	// An elastic job of five 1-cpu pods holds 5 of the queue's 8 cpu.
	fill := job(ns, "fill", q, 1, task{name: "worker", replicas: 5, min: 1, cpu: "1"})
	w.createJob(t, fill)
	fillers := podNames(fill)
	w.env.WaitBound(t, ns, timeout, fillers...)
	blocked := job(ns, "blocked", q, 0, task{name: "worker", replicas: 4, min: 4, cpu: "1500m"})
	w.createJob(t, blocked)
	var pg *vc.PodGroup
	harness.WaitFor(t, timeout, func() (bool, error) {
		pg = w.podGroupOf(t, ns, blocked.Name)
		return pg != nil && hasTrue(pg, vc.PodGroupUnschedulableType, "remaining capability 3"), nil
	}, "blocked's PodGroup refused on the remaining capability 3")
	before := pg.ResourceVersion
	// Two of its pods finish: the remaining capability the verdict quotes
	// moves to 4, then 5, still short of the 6 it needs.
	for _, name := range fillers[:2] {
		w.finish(t, ns, v1.PodSucceeded, name)
	}
	// Once Caldera has counted the completions (its Queue status says
	// 3 cpu allocated), the PodGroup stays as written for three
	// status periods.
	harness.WaitFor(t, timeout, func() (bool, error) {
		vq, err := w.vcc.SchedulingV1beta1().Queues().Get(t.Context(), q, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		c := vq.Status.Allocated[v1.ResourceCPU]
		return c.Cmp(resource.MustParse("3")) == 0, nil
	}, "Queue "+q+" status: 3 cpu allocated")
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if cur := w.podGroupOf(t, ns, blocked.Name); cur.ResourceVersion != before {
			t.Fatalf("blocked's PodGroup was rewritten while its verdict (capability) stood: %+v", cur.Status.Conditions)
		}
		time.Sleep(100 * time.Millisecond)
	}
	after := w.podGroupOf(t, ns, blocked.Name)
	if after.Status.Phase != vc.PodGroupPending {
		t.Errorf("blocked: phase %q, want Pending", after.Status.Phase)
	}
	t.Logf("blocked's PodGroup across 2 completions in its queue: resourceVersion %s -> %s", before, after.ResourceVersion)
}

// taskMinimums runs master 1 (minAvailable 1) + worker 4 (minAvailable 3)
// with minAvailable 4: four workers alone make four members, but Volcano's
// gang plugin holds them until the master is placed too. The master asks
// for a node labelled for masters, which no node is at first; while it
// cannot be placed, no worker may be bound, and once such a node joins,
// the job runs whole.
func (w world) taskMinimums(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 1, "8", "32Gi")
	q := "tasks-" + ns
	w.createQueue(t, q, 1, nil)
	j := job(ns, "tasks", q, 4, task{name: "master", replicas: 1, min: 1, cpu: "1"}, task{name: "worker", replicas: 4, min: 3, cpu: "1"})
	masterLabel := map[string]string{"caldera.test/role": "master"}
	j.Spec.Tasks[0].Template.Spec.NodeSelector = masterLabel
	w.createJob(t, j)
	master := "tasks-master-0"
	// Watch from creation: a worker bound while no node can hold the
	// master is the failure. The master stays unplaceable until a node
	// labelled for it joins, 5 s after the scheduler has said it fits
	// nowhere: long enough for an unguarded gang of four workers to bind.
	var unschedulableAt time.Time
	added := false
	harness.WaitFor(t, timeout, func() (bool, error) {
		pods, err := w.env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		masterBound, workersBound := false, 0
		for _, p := range pods.Items {
			switch {
			case p.Name == master:
				masterBound = p.Spec.NodeName != ""
				for _, c := range p.Status.Conditions {
					if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && unschedulableAt.IsZero() {
						unschedulableAt = time.Now()
					}
				}
			case p.Spec.NodeName != "":
				workersBound++
			}
		}
		// Until a node can hold the master, a bound worker is the failure.
		// After, the gang passes Permit whole and its members bind in
		// parallel: a worker may show bound milliseconds before the master.
		if workersBound > 0 && !masterBound && !added {
			return false, fmt.Errorf("%d workers bound while no node could hold their master", workersBound)
		}
		if !added && !unschedulableAt.IsZero() && time.Since(unschedulableAt) > 5*time.Second {
			w.env.AddNodes(t, 1, "8", "32Gi", harness.NodeLabels(masterLabel))
			added = true
		}
		return masterBound && workersBound == 4, nil
	}, "the master and its four workers bound together, once a node holds the master")
	if !added {
		t.Errorf("the master was bound before any node could hold it")
	}
}

// unservedScheduler: a job whose pods name a scheduler no profile serves
// is admitted on its PodGroup (its pods do not exist yet), and holds its
// queue's whole capability; once its pods have not reached Caldera for
// 30 s it goes back to Pending, saying which scheduler they name, and the
// job waiting behind it runs.
func (w world) unservedScheduler(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 1, "8", "32Gi")
	q := "lost-" + ns
	w.createQueue(t, q, 1, v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")})
	lost := job(ns, "lost", q, 0, task{name: "w", replicas: 4, min: 4, cpu: "1"})
	lost.Spec.SchedulerName = "nobody"
	w.createJob(t, lost)
	w.waitPodGroup(t, ns, lost.Name, "Inqueue", func(pg *vc.PodGroup) bool { return pg.Status.Phase == vc.PodGroupInqueue })
	behind := job(ns, "behind", q, 0, task{name: "w", replicas: 2, min: 2, cpu: "1"})
	began := w.createJob(t, behind)
	w.waitPodGroup(t, ns, lost.Name, `Pending, naming scheduler "nobody"`, func(pg *vc.PodGroup) bool {
		return pg.Status.Phase == vc.PodGroupPending && hasTrue(pg, vc.PodGroupUnschedulableType, `scheduler "nobody"`)
	})
	w.env.WaitBound(t, ns, timeout, podNames(behind)...)
	t.Logf("the job behind bound %v after it was created (the lost job held the queue for 30 s)", time.Since(began).Round(100*time.Millisecond))
}

// jobDeleted: with a queue's capability full, deleting the running job
// (its controller deletes its pods and PodGroup) admits the one behind it.
func (w world) jobDeleted(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 1, "8", "32Gi")
	q := "del-" + ns
	w.createQueue(t, q, 1, v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")})
	first := job(ns, "first", q, 0, task{name: "w", replicas: 4, min: 4, cpu: "1"})
	next := job(ns, "next", q, 0, task{name: "w", replicas: 4, min: 4, cpu: "1"})
	w.createJob(t, first)
	w.env.WaitBound(t, ns, timeout, podNames(first)...)
	w.createJob(t, next)
	w.waitPodGroup(t, ns, next.Name, "Pending on the queue's capability", func(pg *vc.PodGroup) bool {
		return pg.Status.Phase == vc.PodGroupPending && hasTrue(pg, vc.PodGroupUnschedulableType, "capability")
	})
	bg := metav1.DeletePropagationBackground
	if err := w.vcc.BatchV1alpha1().Jobs(ns).Delete(t.Context(), first.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	// No kubelet finishes the pods the controller deletes: finish them,
	// as one would, until none of first's is left.
	harness.WaitFor(t, timeout, func() (bool, error) {
		w.env.FinishTerminating(t, ns)
		pods, err := w.env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Name, "first-") {
				return false, nil
			}
		}
		return true, nil
	}, "the deleted job's pods gone")
	w.env.WaitBound(t, ns, timeout, podNames(next)...)
	t.Logf("the job behind bound %v after the running job was deleted", time.Since(deleted).Round(10*time.Millisecond))
}
