package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// demoNamespace holds the demo's PodGroups and pods.
const demoNamespace = "demo"

// demoQueues are the queues the demo creates and feeds.
var demoQueues = []struct {
	name   string
	weight int32
	cpuCap string
}{
	{"team-a", 1, ""},
	{"team-b", 3, ""},
	{"team-c", 1, "8"},
}

// runDemo creates the demo queues, streams gangs and singletons into them,
// removes finished work and, unless --quiet, redraws a status table every
// second until ctx is cancelled.
func runDemo(ctx context.Context, c *clients, o sandboxOptions, kubeconfig string) {
	if err := setupDemo(ctx, c); err != nil {
		if ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "caldera-sandbox: demo:", err)
		}
		return
	}
	// Keep about three times the cluster's cpu in flight.
	cpu := resource.MustParse(o.nodeCPU)
	maxPods := int(3 * int64(o.nodes) * cpu.Value())
	if maxPods < 6 {
		maxPods = 6
	}
	seq := 0
	nextSubmit := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		st, err := observe(ctx, c)
		if err == nil {
			if time.Now().After(nextSubmit) && st.livePods < maxPods {
				seq++
				submit(ctx, c, seq, o.controllers)
				nextSubmit = time.Now().Add(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
			}
			reap(ctx, c, st)
			if !o.quiet {
				draw(st, o, kubeconfig)
			}
		} else if ctx.Err() == nil && !o.quiet {
			fmt.Fprintln(os.Stderr, "caldera-sandbox: demo:", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func setupDemo(ctx context.Context, c *clients) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, dq := range demoQueues {
		q := &qapi.Queue{
			ObjectMeta: metav1.ObjectMeta{Name: dq.name},
			Spec:       qapi.QueueSpec{Weight: dq.weight},
		}
		if dq.cpuCap != "" {
			q.Spec.Capability = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(dq.cpuCap)}
		}
		if _, err := c.queues.SchedulingV1alpha1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// submit creates one gang (2-6 pods) or, one time in four, a singleton, in a
// random queue; its pods run 10-30 s. With the controllers running, each is
// a Job, as users submit work: a gang is an Indexed Job whose pod template
// joins its PodGroup, a singleton a plain Job of one pod; the Job controller
// makes the pods and the TTL-after-finished controller deletes the Job (and
// the garbage collector its pods) a few seconds after it completes.
// Without them (--controllers=false) the demo creates the pods itself.
func submit(ctx context.Context, c *clients, seq int, jobs bool) {
	queue := demoQueues[rand.IntN(len(demoQueues))].name
	runFor := fmt.Sprintf("%ds", 10+rand.IntN(21))
	if rand.IntN(4) == 0 {
		pod := demoPod(fmt.Sprintf("%s-single-%d", queue, seq), runFor)
		pod.Labels[qapi.QueueLabel] = queue
		if jobs {
			_, _ = c.kube.BatchV1().Jobs(demoNamespace).Create(ctx, demoJob(pod, 1, false), metav1.CreateOptions{})
			return
		}
		_, _ = c.kube.CoreV1().Pods(demoNamespace).Create(ctx, pod, metav1.CreateOptions{})
		return
	}
	size := 2 + rand.IntN(5)
	name := fmt.Sprintf("%s-gang-%d", queue, seq)
	if jobs {
		// A gang as users ask for one: the annotation on the Job's pod
		// template, no PodGroup written. Caldera creates PodGroup
		// job-<name>, owned by the Job, so the garbage collector deletes
		// it with the Job (docs/gangs.md).
		pod := demoPod(name, runFor)
		pod.Labels[qapi.QueueLabel] = queue
		pod.Annotations[qapi.GangMinMemberAnnotation] = fmt.Sprint(size)
		_, _ = c.kube.BatchV1().Jobs(demoNamespace).Create(ctx, demoJob(pod, int32(size), true), metav1.CreateOptions{})
		return
	}
	// Without controllers no Job owns the pods, so the demo writes the
	// PodGroup and labels them.
	pg := &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNamespace, Labels: map[string]string{qapi.QueueLabel: queue}},
		Spec:       schedv1alpha1.PodGroupSpec{MinMember: int32(size)},
	}
	if _, err := c.pg.SchedulingV1alpha1().PodGroups(demoNamespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return
	}
	for i := range size {
		pod := demoPod(fmt.Sprintf("%s-%d", name, i), runFor)
		pod.Labels[schedv1alpha1.PodGroupLabel] = name
		_, _ = c.kube.CoreV1().Pods(demoNamespace).Create(ctx, pod, metav1.CreateOptions{})
	}
}

// demoJob is a Job named after pod whose n pods are pod's template.
func demoJob(pod *corev1.Pod, n int32, indexed bool) *batchv1.Job {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: demoNamespace, Labels: map[string]string{"app": "caldera-demo"}},
		Spec: batchv1.JobSpec{
			Parallelism:             ptr.To(n),
			Completions:             ptr.To(n),
			BackoffLimit:            ptr.To[int32](0),
			TTLSecondsAfterFinished: ptr.To[int32](5),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations},
				Spec:       *pod.Spec.DeepCopy(),
			},
		},
	}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if indexed {
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	}
	return job
}

func demoPod(name, runFor string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   demoNamespace,
			Labels:      map[string]string{"app": "caldera-demo"},
			Annotations: map[string]string{completeAfterAnnotation: runFor},
		},
		Spec: corev1.PodSpec{
			SchedulerName: "caldera-scheduler",
			Containers: []corev1.Container{{
				Name:      "work",
				Image:     "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			}},
		},
	}
}

// state is one observation of the demo's objects.
type state struct {
	queues   []qapi.Queue
	groups   []schedv1alpha1.PodGroup
	pods     []corev1.Pod
	livePods int // pods not yet finished
}

func observe(ctx context.Context, c *clients) (*state, error) {
	qs, err := c.queues.SchedulingV1alpha1().Queues().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pgs, err := c.pg.SchedulingV1alpha1().PodGroups(demoNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pods, err := c.kube.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	st := &state{queues: qs.Items, groups: pgs.Items, pods: pods.Items}
	for _, p := range st.pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			st.livePods++
		}
	}
	return st, nil
}

// reap deletes finished gangs and singletons a few seconds after they finish.
func reap(ctx context.Context, c *clients, st *state) {
	const linger = 5 * time.Second
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	done := map[string]bool{}
	for _, pg := range st.groups {
		if pg.Labels[qapi.ManagedByLabel] == qapi.ManagedByCaldera {
			continue // created for a Job's gang: deleted with the Job
		}
		if (pg.Status.Phase == schedv1alpha1.PodGroupFinished || pg.Status.Phase == schedv1alpha1.PodGroupFailed) && pg.DeletionTimestamp == nil {
			done[pg.Name] = true
		}
	}
	for _, p := range st.pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		group := groupOf(&p)
		finishedAt := finishTime(p)
		if finishedAt.IsZero() || time.Since(finishedAt) < linger {
			continue
		}
		if group == "" || done[group] {
			_ = c.kube.CoreV1().Pods(demoNamespace).Delete(ctx, p.Name, del)
		}
	}
	for name := range done {
		live := false
		for _, p := range st.pods {
			if groupOf(&p) == name && p.DeletionTimestamp == nil {
				finishedAt := finishTime(p)
				if finishedAt.IsZero() || time.Since(finishedAt) < linger {
					live = true
				}
			}
		}
		if !live {
			_ = c.pg.SchedulingV1alpha1().PodGroups(demoNamespace).Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
}

// groupOf names the PodGroup of p's gang as the scheduler decides it
// (gangbook.GroupKeyOf: the pod-group label, else the PodGroup created for
// its Job's gang by annotation); "" for a singleton.
func groupOf(p *corev1.Pod) string {
	k, _ := gangbook.GroupKeyOf(p)
	return k.Name
}

// finishTime is when a pod's containers terminated, or zero while it runs.
func finishTime(p corev1.Pod) time.Time {
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		return time.Time{}
	}
	var t time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated != nil && cs.State.Terminated.FinishedAt.After(t) {
			t = cs.State.Terminated.FinishedAt.Time
		}
	}
	if t.IsZero() {
		t = time.Now().Add(-time.Hour) // finished, time unknown: reap now
	}
	return t
}

// draw prints the status table, clearing the screen first on a terminal.
func draw(st *state, o sandboxOptions, kubeconfig string) {
	var b strings.Builder
	if isTerminal(os.Stdout) {
		b.WriteString("\x1b[H\x1b[2J")
	} else {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Caldera sandbox  %s  %d nodes x %s cpu   kubectl --kubeconfig %s get podgroups,queues -A   (Ctrl-C stops)\n\n",
		time.Now().Format("15:04:05"), o.nodes, o.nodeCPU, kubeconfig)

	fmt.Fprintf(&b, "%-10s %6s %8s %10s %9s %6s %8s %8s %8s\n", "QUEUE", "WEIGHT", "CAP.CPU", "DESERVED", "ALLOCATED", "SHARE", "PENDING", "ADMITTED", "RUNNING")
	queues := append([]qapi.Queue(nil), st.queues...)
	sort.Slice(queues, func(i, j int) bool { return queues[i].Name < queues[j].Name })
	for _, q := range queues {
		capCPU := "-"
		if v, ok := q.Spec.Capability[corev1.ResourceCPU]; ok {
			capCPU = v.String()
		}
		fmt.Fprintf(&b, "%-10s %6d %8s %10s %9s %6s %8d %8d %8d\n", q.Name, q.Spec.Weight, capCPU,
			cpuOf(q.Status.Deserved), cpuOf(q.Status.Allocated), orDash(q.Status.Share),
			q.Status.Pending, q.Status.Admitted, q.Status.Running)
	}

	bound := map[string]int{}
	var singles [4]int // pending, running, succeeded, other
	for _, p := range st.pods {
		if g := groupOf(&p); g != "" {
			if p.Spec.NodeName != "" {
				bound[g]++
			}
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			singles[2]++
		case p.Status.Phase == corev1.PodRunning:
			singles[1]++
		case p.Spec.NodeName == "":
			singles[0]++
		default:
			singles[3]++
		}
	}
	groups := append([]schedv1alpha1.PodGroup(nil), st.groups...)
	sort.Slice(groups, func(i, j int) bool {
		return groups[i].CreationTimestamp.Before(&groups[j].CreationTimestamp) ||
			(groups[i].CreationTimestamp.Equal(&groups[j].CreationTimestamp) && groups[i].Name < groups[j].Name)
	})
	const maxRows = 18
	fmt.Fprintf(&b, "\n%-20s %-8s %-10s %4s %6s %8s %9s\n", "GANG", "QUEUE", "PHASE", "MIN", "BOUND", "RUNNING", "SUCCEEDED")
	shown := 0
	for _, pg := range groups {
		if shown == maxRows {
			fmt.Fprintf(&b, "... and %d more\n", len(groups)-shown)
			break
		}
		shown++
		phase := string(pg.Status.Phase)
		if phase == "" {
			phase = "-"
		}
		fmt.Fprintf(&b, "%-20s %-8s %-10s %4d %6d %8d %9d\n", pg.Name, pg.Labels[qapi.QueueLabel], phase,
			pg.Spec.MinMember, bound[pg.Name], pg.Status.Running, pg.Status.Succeeded)
	}
	fmt.Fprintf(&b, "\nsingleton pods: %d pending, %d running, %d succeeded\n", singles[0], singles[1], singles[2])
	_, _ = os.Stdout.WriteString(b.String())
}

func cpuOf(l corev1.ResourceList) string {
	if v, ok := l[corev1.ResourceCPU]; ok {
		return v.String()
	}
	return "0"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
