// Package examples_test proves that what Caldera ships is valid and works:
// every YAML in examples/ is created against a real kube-apiserver and its
// gangs bind fully with the real scheduler, and every object of manifests/
// (as `kubectl apply -k manifests/` would install it) and of the Helm chart
// (as `helm template` renders it) passes a server-side dry-run create.
package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

const timeout = 60 * time.Second

func TestExamples(t *testing.T) {
	// kube-controller-manager makes the pods of the examples' Jobs and
	// StatefulSets, as in a real cluster.
	env := harness.StartWith(t, harness.WithControllers())
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))

	// The examples' scheduler talks through a recording proxy: the RBAC of
	// manifests/ and of the chart must allow every request it made.
	rec, proxyKubeconfig := startRecorder(t, env.Config)

	t.Run("examples schedule", func(t *testing.T) {
		kubeconfig := env.Kubeconfig
		env.Kubeconfig = proxyKubeconfig
		// Leader election as deployed, so its Lease requests are recorded.
		env.StartScheduler(t, harness.WithLeaderElection("caldera-scheduler"))
		env.Kubeconfig = kubeconfig
		// 4 x 8 CPU: room for every example at once (8 + 3.5 + 5 + 2.5 + 1 + 0.5 CPU).
		env.AddNodes(t, 4, "8", "32Gi")
		ns := env.Namespace(t)

		files, err := filepath.Glob(filepath.Join(env.RepoRoot, "examples", "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no examples found: %v", err)
		}
		var objs []*unstructured.Unstructured
		for _, f := range files {
			objs = append(objs, decodeFile(t, f)...)
		}
		// Queues (and anything else cluster-scoped) first: groups name them.
		sort.SliceStable(objs, func(i, j int) bool {
			return objs[i].GetKind() == "Queue" && objs[j].GetKind() != "Queue"
		})

		wantBound := 0
		for _, u := range objs {
			created := create(t, env, mapper, ns, u, false)
			switch u.GetKind() {
			case "Queue":
				name := u.GetName()
				gvr := mustMapping(t, mapper, u).Resource
				t.Cleanup(func() {
					if err := env.Dynamic.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
						t.Errorf("deleting queue %s: %v", name, err)
					}
				})
			case "Pod":
				wantBound++
			case "Job":
				// The real Job controller makes its pods.
				var job batchv1.Job
				fromUnstructured(t, created, &job)
				wantBound += int(ptr.Deref(job.Spec.Parallelism, 1))
				deleteWorkload(t, env, mapper, created)
			case "StatefulSet":
				var sts appsv1.StatefulSet
				fromUnstructured(t, created, &sts)
				wantBound += int(ptr.Deref(sts.Spec.Replicas, 1))
				deleteWorkload(t, env, mapper, created)
			case "Deployment":
				var d appsv1.Deployment
				fromUnstructured(t, created, &d)
				wantBound += int(ptr.Deref(d.Spec.Replicas, 1))
				deleteWorkload(t, env, mapper, created)
			case "CronJob":
				// One run now, as `kubectl create job --from=cronjob/...`
				// makes it: the schedule would start one within the hour.
				var cj batchv1.CronJob
				fromUnstructured(t, created, &cj)
				wantBound += int(ptr.Deref(cj.Spec.JobTemplate.Spec.Parallelism, 1))
				runCronJobNow(t, env, &cj)
				deleteWorkload(t, env, mapper, created)
			}
		}
		if wantBound == 0 {
			t.Fatal("the examples create no pods")
		}
		// Every pod of the namespace: gangs by label, by annotation, and
		// plain pods.
		env.WaitBoundCount(t, ns, "", wantBound, timeout)

		// Gangs by annotation got their PodGroups, created by the scheduler
		// (through the recording proxy, so its RBAC is checked below).
		for _, name := range []string{"job-pytorch-train", "statefulset-ray-worker", "job-nightly-eval-now"} {
			pg, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Errorf("PodGroup %s of a gang by annotation: %v", name, err)
				continue
			}
			if pg.Labels["scheduling.caldera.dev/managed-by"] != "caldera" || len(pg.OwnerReferences) != 1 {
				t.Errorf("PodGroup %s: labels %v, owners %v; want managed by caldera, one owner", name, pg.Labels, pg.OwnerReferences)
			}
		}

		// The status writers catch up: every PodGroup reports its phase and
		// every team queue its allocation (and their writes are recorded).
		harness.WaitFor(t, timeout, func() (bool, error) {
			pgs, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil || len(pgs.Items) == 0 {
				return false, err
			}
			for _, pg := range pgs.Items {
				// Bound but never running (no kubelet): Scheduling.
				if pg.Status.Phase != "Scheduling" {
					return false, nil
				}
			}
			return true, nil
		}, "every example PodGroup's status phase to be Scheduling")
		queues := schema.GroupVersionResource{Group: "scheduling.caldera.dev", Version: "v1alpha1", Resource: "queues"}
		for _, q := range []string{"team-a", "team-b"} {
			harness.WaitFor(t, timeout, func() (bool, error) {
				u, err := env.Dynamic.Resource(queues).Get(t.Context(), q, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				cpu, _, _ := unstructured.NestedString(u.Object, "status", "allocated", "cpu")
				return cpu != "" && cpu != "0", nil
			}, "queue "+q+" to report its allocation")
		}
		t.Logf("%d example objects created, %d pods bound", len(objs), wantBound)
	})

	t.Run("manifests dry-run", func(t *testing.T) {
		objs := kustomizeManifests(t, env.RepoRoot)
		// docs/deploy.md uninstalls with `kubectl delete -k manifests/ -l
		// app.kubernetes.io/part-of=caldera`, which must take everything but
		// the CRDs (deleting those deletes every PodGroup and Queue).
		for _, u := range objs {
			crd := u.GetKind() == "CustomResourceDefinition"
			if labelled := u.GetLabels()["app.kubernetes.io/part-of"] == "caldera"; labelled == crd {
				t.Errorf("%s %s: labelled part-of=caldera %v; the uninstall would delete it %v, want only the CRDs kept", u.GetKind(), u.GetName(), labelled, labelled)
			}
		}
		dryRunAll(t, env, mapper, objs)
		checkRBAC(t, rec, objs)
	})

	t.Run("chart defaults are the shipped config", func(t *testing.T) {
		want := decodeConfig(t, readFile(t, filepath.Join(env.RepoRoot, "manifests", "scheduler", "config.yaml")))
		got := decodeConfig(t, chartConfig(t, helmTemplate(t, env.RepoRoot)))
		if !reflect.DeepEqual(got, want) {
			gotJSON, _ := json.MarshalIndent(got, "", "  ")
			wantJSON, _ := json.MarshalIndent(want, "", "  ")
			t.Errorf("the chart's default configuration differs from manifests/scheduler/config.yaml: keep values.yaml and templates/configmap.yaml in sync\nchart:\n%s\nmanifests:\n%s", gotJSON, wantJSON)
		}
	})

	t.Run("chart dry-run and config", func(t *testing.T) {
		// Exercise the templated parts of the config too.
		objs := helmTemplate(t, env.RepoRoot,
			"--set", "scoreWeights.NodeResourcesFit=2",
			"--set", "nodeResourcesFitArgs.scoringStrategy.type=LeastAllocated",
			"--set-json", `extraPluginConfig=[{"name":"PodTopologySpread","args":{"defaultingType":"List"}}]`)
		dryRunAll(t, env, mapper, objs)
		checkRBAC(t, rec, objs)

		// The scheduler starts with the chart's configuration and gangs work.
		config := chartConfig(t, objs)
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		env.StartScheduler(t, harness.WithConfigFile(path))
		env.AddNodes(t, 2, "4", "8Gi")
		ns := env.Namespace(t)
		env.CreatePodGroup(t, harness.PodGroup(ns, "gang", 3))
		for i := range 3 {
			env.CreatePod(t, harness.Pod(ns, fmt.Sprintf("gang-%d", i)).CPU("1").Group("gang").Obj())
		}
		env.WaitBoundCount(t, ns, "scheduling.x-k8s.io/pod-group=gang", 3, timeout)
	})
}

// runCronJobNow creates one run of cj, as `kubectl create job --from`
// does: its Job template, owned by the CronJob.
func runCronJobNow(t *testing.T, env *harness.Env, cj *batchv1.CronJob) {
	t.Helper()
	yes := true
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       cj.Namespace,
			Name:            cj.Name + "-now",
			Annotations:     map[string]string{"cronjob.kubernetes.io/instantiate": "manual"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: &yes}},
		},
		Spec: cj.Spec.JobTemplate.Spec,
	}
	if _, err := env.Client.BatchV1().Jobs(cj.Namespace).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("running CronJob %s now: %v", cj.Name, err)
	}
}

// chartConfig returns config.yaml of the chart's ConfigMap.
func chartConfig(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == "ConfigMap" {
			if config, _, _ := unstructured.NestedString(u.Object, "data", "config.yaml"); config != "" {
				return config
			}
		}
	}
	t.Fatal("the chart renders no ConfigMap with config.yaml")
	return ""
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func decodeConfig(t *testing.T, data string) map[string]any {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
		t.Fatalf("decoding a KubeSchedulerConfiguration: %v", err)
	}
	return cfg
}

// dryRunAll creates every object with a server-side dry run. CRDs are compared
// with the installed ones instead (harness.Start installed manifests/crds, so
// a create would only say AlreadyExists); namespaces are created for real so
// that the objects in them can be dry-run.
func dryRunAll(t *testing.T, env *harness.Env, mapper meta.RESTMapper, objs []*unstructured.Unstructured) {
	t.Helper()
	kinds := map[string]int{}
	for _, u := range objs {
		kinds[u.GetKind()]++
		switch u.GetKind() {
		case "CustomResourceDefinition":
			if _, err := env.APIExt.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), u.GetName(), metav1.GetOptions{}); err != nil {
				t.Errorf("CRD %s is not one of manifests/crds: %v", u.GetName(), err)
			}
		case "Namespace":
			_, err := env.Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetName()}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("creating namespace %s: %v", u.GetName(), err)
			}
		}
	}
	for _, u := range objs {
		if k := u.GetKind(); k == "CustomResourceDefinition" || k == "Namespace" {
			continue
		}
		create(t, env, mapper, "", u, true)
	}
	for _, k := range []string{"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "CustomResourceDefinition"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the rendered objects", k)
		}
	}
	t.Logf("dry-run created %d objects: %v", len(objs), kinds)
}

// create creates u (in ns when it is namespaced and names none) and returns
// what the server made of it.
func create(t *testing.T, env *harness.Env, mapper meta.RESTMapper, ns string, u *unstructured.Unstructured, dryRun bool) *unstructured.Unstructured {
	t.Helper()
	m := mustMapping(t, mapper, u)
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var (
		out *unstructured.Unstructured
		err error
	)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if u.GetNamespace() == "" {
			u.SetNamespace(ns)
		}
		out, err = env.Dynamic.Resource(m.Resource).Namespace(u.GetNamespace()).Create(t.Context(), u, opts)
	} else {
		out, err = env.Dynamic.Resource(m.Resource).Create(t.Context(), u, opts)
	}
	if err != nil {
		t.Fatalf("creating %s %s/%s (dry-run %v): %v", u.GetKind(), u.GetNamespace(), u.GetName(), dryRun, err)
	}
	return out
}

func mustMapping(t *testing.T, mapper meta.RESTMapper, u *unstructured.Unstructured) *meta.RESTMapping {
	t.Helper()
	gvk := u.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("no resource for %v: %v", gvk, err)
	}
	return m
}

// decodeFile reads a multi-document YAML file; empty documents are skipped.
func decodeFile(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs
}

func decode(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := r.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("a document without kind or apiVersion: %v", obj)
		}
		out = append(out, u)
	}
}

func fromUnstructured(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatalf("converting %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// deleteWorkload deletes a Job or StatefulSet at the end of the test,
// before its namespace goes: its controller would make again the pods
// the namespace clean-up deletes. Background propagation: the garbage
// collector removes the pods.
func deleteWorkload(t *testing.T, env *harness.Env, mapper meta.RESTMapper, u *unstructured.Unstructured) {
	gvr := mustMapping(t, mapper, u).Resource
	ns, name := u.GetNamespace(), u.GetName()
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		err := env.Dynamic.Resource(gvr).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &bg})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s %s: %v", u.GetKind(), name, err)
		}
	})
}

// kustomizeManifests renders manifests/ with the kustomize pinned in
// hack/kustomize/go.mod (what `kubectl apply -k` does) and checks the render
// holds exactly the kustomization's resources and generated ConfigMap.
func kustomizeManifests(t *testing.T, root string) []*unstructured.Unstructured {
	t.Helper()
	dir := filepath.Join(root, "manifests")
	var k struct {
		Resources          []string `json:"resources"`
		ConfigMapGenerator []struct {
			Name      string   `json:"name"`
			Namespace string   `json:"namespace"`
			Files     []string `json:"files"`
		} `json:"configMapGenerator"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("manifests/kustomization.yaml: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range k.Resources {
		objs = append(objs, decodeFile(t, filepath.Join(dir, r))...)
	}
	for _, g := range k.ConfigMapGenerator {
		cm := &v1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: g.Namespace},
			Data:       map[string]string{},
		}
		for _, f := range g.Files {
			key, path, ok := strings.Cut(f, "=")
			if !ok {
				key, path = filepath.Base(f), f
			}
			b, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil {
				t.Fatal(err)
			}
			cm.Data[key] = string(b)
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: obj})
	}

	out := goTool(t, root, "hack/kustomize/go.mod", "kustomize", "build", "manifests")
	rendered, err := decode(out)
	if err != nil {
		t.Fatalf("decoding kustomize build output: %v", err)
	}
	if got, want := objectSet(rendered, true), objectSet(objs, true); got != want {
		t.Errorf("kustomize build renders\n%s\nwant (from kustomization.yaml)\n%s", got, want)
	}
	for _, u := range rendered {
		if u.GetKind() == "ConfigMap" && u.GetName() == "caldera-scheduler-config" {
			t.Errorf("the generated ConfigMap has no content hash: the Deployment would not roll on config changes")
		}
	}
	return rendered
}

// helmTemplate renders charts/caldera with helm from hack/helm/go.mod.
func helmTemplate(t *testing.T, root string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out := goTool(t, root, "hack/helm/go.mod", append([]string{"helm", "template", "caldera", "charts/caldera", "--namespace", "caldera-system", "--include-crds"}, args...)...)
	objs, err := decode(out)
	if err != nil {
		t.Fatalf("decoding helm template output: %v", err)
	}
	return objs
}

// goTool runs a tool of a tools module (go tool -modfile=...) in the
// repository root and returns its standard output. A cold first run compiles
// the tool (a minute or two); later runs come from Go's build cache.
func goTool(t *testing.T, root, modfile string, args ...string) []byte {
	t.Helper()
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, append([]string{"tool", "-modfile=" + modfile}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// objectSet lists kind namespace/name, one per line, sorted; generated names
// (kustomize's hash suffix) are cut when trimHash is set.
func objectSet(objs []*unstructured.Unstructured, trimHash bool) string {
	var lines []string
	for _, u := range objs {
		name := u.GetName()
		if trimHash && u.GetKind() == "ConfigMap" {
			if i := strings.LastIndex(name, "-"); i > 0 && len(name)-i == 11 {
				name = name[:i]
			}
		}
		lines = append(lines, fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), name))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
