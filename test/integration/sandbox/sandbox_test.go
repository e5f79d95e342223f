// Package sandbox tests bin/caldera-sandbox end to end: it builds the binary,
// starts it, runs a gang and a Job through it with kubectl's kind of access
// and stops it.
package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"github.com/caldera-sched/caldera/internal/kubectlcaldera"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

func TestSandbox(t *testing.T) {
	sb := startSandbox(t, "--nodes", "2", "--quiet")
	kubeconfig := sb.kubeconfig

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	pgClient := pgclientset.NewForConfigOrDie(cfg)
	ctx := t.Context()

	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("got %d nodes, want 2", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		readyCond := false
		for _, c := range n.Status.Conditions {
			readyCond = readyCond || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !readyCond {
			t.Errorf("node %s is not Ready: %v", n.Name, n.Status.Conditions)
		}
	}

	// A 2-member gang whose pods KWOK completes a few seconds after they run.
	pg := &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "gang", Namespace: metav1.NamespaceDefault},
		Spec:       schedv1alpha1.PodGroupSpec{MinMember: 2},
	}
	if _, err := pgClient.SchedulingV1alpha1().PodGroups(pg.Namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gang-0", "gang-1"} {
		pod := sandboxPod(name, "1")
		pod.Labels = map[string]string{schedv1alpha1.PodGroupLabel: pg.Name}
		pod.Annotations = map[string]string{"pod-complete.stage.kwok.x-k8s.io/delay": "4s"}
		if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	created := time.Now()
	waitPhase := func(want schedv1alpha1.PodGroupPhase) {
		t.Helper()
		last := schedv1alpha1.PodGroupPhase("")
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := pgClient.SchedulingV1alpha1().PodGroups(pg.Namespace).Get(ctx, pg.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = got.Status.Phase
			return last == want, nil
		})
		if err != nil {
			t.Fatalf("PodGroup phase %q, want %q: %v", last, want, err)
		}
		t.Logf("PodGroup %s after %v", want, time.Since(created).Round(time.Millisecond))
	}
	waitPhase(schedv1alpha1.PodGroupRunning)
	waitPhase(schedv1alpha1.PodGroupFinished)

	// A real workload: the sandbox's Job controller makes the pods of an
	// Indexed Job that asks for a gang by annotation (no PodGroup written),
	// Caldera creates PodGroup job-train and places them as one gang,
	// KWOK completes them, the Job is Complete and the PodGroup Finished.
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: metav1.NamespaceDefault},
		Spec: batchv1.JobSpec{
			Parallelism:    ptr.To[int32](2),
			Completions:    ptr.To[int32](2),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Annotations: map[string]string{
						"pod-complete.stage.kwok.x-k8s.io/delay": "2s",
						qapi.GangMinMemberAnnotation:             "2",
					},
				},
				Spec: corev1.PodSpec{
					SchedulerName: "caldera-scheduler",
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "w", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
					}},
				},
			},
		},
	}
	if _, err := client.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	submitted := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		j, err := client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the Job did not complete: %v", err)
	}
	t.Logf("Job complete after %v", time.Since(submitted).Round(time.Millisecond))
	pg = &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-train", Namespace: metav1.NamespaceDefault}}
	waitPhase(schedv1alpha1.PodGroupFinished)
	if got, err := pgClient.SchedulingV1alpha1().PodGroups(pg.Namespace).Get(ctx, pg.Name, metav1.GetOptions{}); err != nil || got.Status.Succeeded != 2 {
		t.Errorf("created PodGroup %s: %v; want Finished with 2 succeeded", pg.Name, err)
	}

	// Every kubectl caldera command against the sandbox: each exits 0 and
	// shows what the scheduler wrote about the jobs above.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"queues"}, "default"},
		{[]string{"jobs", "-A"}, "job-train"},
		{[]string{"jobs", "-n", "default", "-o", "json"}, `"name": "gang"`},
		{[]string{"explain", "podgroup/job-train", "-n", "default"}, "stage Finished"},
		{[]string{"explain", "gang-0", "-n", "default", "-o", "yaml"}, "stage: Finished"},
		// The example's Service is left out; its Job's gang is asked
		// about (its queue team-a exists only with examples/queues.yaml,
		// so the answer may be no: exit 1 is an answer, not an error).
		{[]string{"what-if", "-f", filepath.Join(harness.RepoRoot(t), "examples", "pytorch-gang.yaml"), "-n", "default"}, "pg:default/job-pytorch-train"},
	} {
		var out bytes.Buffer
		cmd := kubectlcaldera.NewCommand(&out)
		cmd.SetArgs(append(c.args, "--kubeconfig", kubeconfig))
		if err := cmd.ExecuteContext(ctx); (err != nil && !errors.Is(err, kubectlcaldera.ErrWouldNotStart)) || !strings.Contains(out.String(), c.want) {
			t.Errorf("kubectl caldera %s: %v, want %q in:\n%s", strings.Join(c.args, " "), err, c.want, out.String())
		}
	}

	sb.stop(t)
}

// sandbox is a running caldera-sandbox process.
type sandbox struct {
	kubeconfig string
	cmd        *exec.Cmd
	// exited delivers the process's exit; stopped is set by whoever
	// received it, so the cleanup does not wait again.
	exited  chan error
	stopped *bool
	// tmp is the process's TMPDIR.
	tmp string
}

// startSandbox builds bin/caldera-sandbox, starts it with args (plus its
// own kubeconfig and TMPDIR) and waits for its ready line.
func startSandbox(t *testing.T, args ...string) *sandbox {
	t.Helper()
	root := harness.RepoRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "caldera-sandbox")
	began := time.Now()
	build := exec.Command("go", "build", "-o", bin, "./cmd/sandbox")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sandbox: %v\n%s", err, out)
	}
	t.Logf("built in %v", time.Since(began).Round(time.Millisecond))

	// The sandbox keeps everything under $TMPDIR/caldera-sandbox-*; give it
	// its own TMPDIR to check it leaves nothing behind.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stderr = &testWriter{t: t}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if path, ok := strings.CutPrefix(line, "ready: kubeconfig="); ok {
				ready <- path
			} else {
				t.Logf("sandbox stdout: %s", line)
			}
		}
		exited <- cmd.Wait()
	}()
	stopped := new(bool)
	t.Cleanup(func() {
		if !*stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	select {
	case path := <-ready:
		if path != kubeconfig {
			t.Fatalf("ready line names kubeconfig %q, want %q", path, kubeconfig)
		}
	case err := <-exited:
		*stopped = true
		t.Fatalf("sandbox exited before it was ready: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatalf("sandbox not ready within 90s")
	}
	t.Logf("ready in %v", time.Since(began).Round(time.Millisecond))
	return &sandbox{kubeconfig: kubeconfig, cmd: cmd, exited: exited, stopped: stopped, tmp: tmp}
}

// testWriter logs the sandbox's stderr lines.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("sandbox stderr: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// stop sends SIGTERM and checks a clean exit (status 0 within 45 s) that
// leaves nothing in the process's TMPDIR: the sandbox's children
// (Karpenter with --autoscaler) stopped, its temporary directory removed.
func (sb *sandbox) stop(t *testing.T) {
	t.Helper()
	began := time.Now()
	if err := sb.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sb.exited:
		*sb.stopped = true
		if err != nil {
			t.Fatalf("sandbox exited with %v, want 0", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatalf("sandbox did not exit within 45s of SIGTERM")
	}
	t.Logf("stopped in %v", time.Since(began).Round(time.Millisecond))
	left, err := os.ReadDir(sb.tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left behind in TMPDIR: %s", e.Name())
	}
}

// sandboxPod is a pause pod of Caldera's scheduler in the default
// namespace, requesting cpu.
func sandboxPod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			SchedulerName: "caldera-scheduler",
			Containers: []corev1.Container{{
				Name: "w", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
			}},
		},
	}
}
