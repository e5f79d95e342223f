package sandbox

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestSandboxExamples applies every example unchanged to the sandbox (real
// controllers, KWOK as the kubelets, Job pods completing after
// --job-run-time) and waits until every Job is Complete, every other pod
// Running, and the PodGroup of the annotated PyTorch Job Finished.
func TestSandboxExamples(t *testing.T) {
	sb := startSandbox(t, "--nodes", "4", "--quiet", "--job-run-time", "3s")
	cfg, err := clientcmd.BuildConfigFromFlags("", sb.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	pgClient := pgclientset.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	ctx := t.Context()

	const ns = "examples"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(harness.RepoRoot(t), "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) > 0 {
				objs = append(objs, u)
			}
		}
	}
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].GetKind() == "Queue" && objs[j].GetKind() != "Queue" })
	began := time.Now()
	jobs := map[string]bool{}
	for _, u := range objs {
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		r := dyn.Resource(m.Resource)
		var created *unstructured.Unstructured
		if m.Scope.Name() == "namespace" {
			created, err = r.Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		} else {
			created, err = r.Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		switch u.GetKind() {
		case "Job":
			jobs[u.GetName()] = true
		case "CronJob":
			// One run now, as `kubectl create job --from=cronjob/...` does.
			var cj batchv1.CronJob
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(created.Object, &cj); err != nil {
				t.Fatal(err)
			}
			yes := true
			run := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: cj.Name + "-now", Namespace: ns,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: &yes}}},
				Spec: cj.Spec.JobTemplate.Spec,
			}
			if _, err := client.BatchV1().Jobs(ns).Create(ctx, run, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			jobs[run.Name] = true
		}
	}

	// Every Job Complete; every pod not a Job's Running.
	harness.WaitFor(t, 120*time.Second, func() (bool, error) {
		for name := range jobs {
			j, err := client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			complete := false
			for _, c := range j.Status.Conditions {
				complete = complete || (c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue)
			}
			if !complete {
				return false, nil
			}
		}
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			ref := metav1.GetControllerOfNoCopy(&p)
			if (ref == nil || ref.Kind != "Job") && p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	}, "every example Job to be Complete and every other pod Running")

	t.Logf("%d example objects: every Job Complete and every other pod Running after %v", len(objs), time.Since(began).Round(time.Millisecond))

	// The annotated PyTorch Job's PodGroup, created by Caldera, finished.
	harness.WaitFor(t, 30*time.Second, func() (bool, error) {
		pg, err := pgClient.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "job-pytorch-train", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pg.Status.Phase == schedv1alpha1.PodGroupFinished && pg.Status.Succeeded == 4, nil
	}, "PodGroup job-pytorch-train to be Finished with 4 succeeded")
}
