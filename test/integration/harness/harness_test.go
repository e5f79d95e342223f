package harness

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/features"
	"sigs.k8s.io/yaml"
)

// TestHarness is the harness's smoke test: one Env, a scheduler running
// kube-scheduler's default profile as caldera-scheduler, a pod bound, then a
// scheduler restart and a second pod bound.
func TestHarness(t *testing.T) {
	env := Start(t)
	sched := env.StartScheduler(t, WithConfigFile("testdata/default-profile.yaml"), WithRegistry())

	var ns string
	t.Run("binds a pod", func(t *testing.T) {
		ns = env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		env.CreatePod(t, Pod(ns, "first").CPU("1").Mem("1Gi").Obj())
		nodes := env.WaitBound(t, ns, 30*time.Second, "first")
		t.Logf("first bound to %s", nodes["first"])
		env.WaitEvent(t, ns, "first", "Scheduled", 30*time.Second)
		env.SetPodPhase(t, ns, "first", v1.PodRunning)

		// A pod that fits nowhere is tried, found unschedulable, and stays so.
		env.CreatePod(t, Pod(ns, "too-big").CPU("100").Obj())
		env.WaitUnschedulable(t, ns, "too-big", 30*time.Second)
		env.ConsistentlyUnbound(t, ns, 200*time.Millisecond, "too-big")

		// The PodGroup CRD is served; the namespace cleanup deletes the group.
		env.CreatePodGroup(t, PodGroup(ns, "pg", 2, PGTimeout(10), PGMinResources("2", "")))
	})
	// The subtest's cleanup deleted its pods although they were bound.
	if pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Fatalf("pods left in %s after cleanup: %v (err %v)", ns, pods, err)
	}
	if pgs, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).List(t.Context(), metav1.ListOptions{}); err != nil || len(pgs.Items) != 0 {
		t.Fatalf("PodGroups left in %s after cleanup: %v (err %v)", ns, pgs, err)
	}
	if code, body := sched.Get(t, "/metrics"); code != 200 || !bytes.Contains(body, []byte("scheduler_schedule_attempts_total")) {
		t.Fatalf("scheduler /metrics: status %d, %d bytes without scheduler_schedule_attempts_total", code, len(body))
	}

	t.Run("binds a pod after a scheduler restart", func(t *testing.T) {
		sched.Stop()
		env.StartScheduler(t, WithConfigFile("testdata/default-profile.yaml"), WithRegistry())
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		env.CreatePod(t, Pod(ns, "second").CPU("1").Mem("1Gi").Priority(100).Obj())
		env.WaitBound(t, ns, 30*time.Second, "second")
	})

	t.Run("fails over between leader-elected schedulers", func(t *testing.T) {
		const lease = "harness-smoke"
		a := env.StartScheduler(t, WithConfigFile("testdata/default-profile.yaml"), WithRegistry(), WithLeaderElection(lease))
		a.WaitLeading(t, 30*time.Second)
		b := env.StartScheduler(t, WithConfigFile("testdata/default-profile.yaml"), WithRegistry(), WithLeaderElection(lease))
		a.Stop() // releases the Lease; app.Run's os.Exit(0) is recovered
		b.WaitLeading(t, 30*time.Second)
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.CreatePod(t, Pod(ns, "third").CPU("1").Obj())
		env.WaitBound(t, ns, 30*time.Second, "third")
	})
}

// TestSchedulerConfigEdits checks the harness's rewrite of a scheduler
// configuration without starting anything.
func TestSchedulerConfigEdits(t *testing.T) {
	env := &Env{Kubeconfig: "/test/kubeconfig"}
	settings := &schedulerSettings{configFile: "testdata/two-profiles.yaml"}
	for _, o := range []SchedulerOption{
		WithLeaderElection("lease-a"),
		WithPluginArgs("CalderaGang", map[string]any{"permitWaitingTimeSeconds": 5, "nested": map[string]any{"b": 2}}),
		WithConfigEdit(func(cfg map[string]any) error { cfg["podInitialBackoffSeconds"] = 2; return nil }),
	} {
		o(settings)
	}
	path := t.TempDir() + "/out.yaml"
	if err := env.writeSchedulerConfig(settings, path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ClientConnection struct {
			Kubeconfig string  `json:"kubeconfig"`
			QPS        float64 `json:"qps"`
		} `json:"clientConnection"`
		LeaderElection struct {
			LeaderElect       bool   `json:"leaderElect"`
			ResourceName      string `json:"resourceName"`
			ResourceNamespace string `json:"resourceNamespace"`
		} `json:"leaderElection"`
		PodInitialBackoffSeconds int `json:"podInitialBackoffSeconds"`
		Profiles                 []struct {
			PluginConfig []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(data, &got); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if got.ClientConnection.Kubeconfig != "/test/kubeconfig" || got.ClientConnection.QPS != 500 {
		t.Errorf("clientConnection = %+v", got.ClientConnection)
	}
	if !got.LeaderElection.LeaderElect || got.LeaderElection.ResourceName != "lease-a" || got.LeaderElection.ResourceNamespace != "kube-system" {
		t.Errorf("leaderElection = %+v", got.LeaderElection)
	}
	if got.PodInitialBackoffSeconds != 2 {
		t.Errorf("podInitialBackoffSeconds = %d, want 2", got.PodInitialBackoffSeconds)
	}
	if len(got.Profiles) != 2 {
		t.Fatalf("got %d profiles, want 2", len(got.Profiles))
	}
	// Profile 0 had CalderaGang args: merged. Profile 1 had none: added.
	wantArgs := []map[string]any{
		{"permitWaitingTimeSeconds": float64(5), "podGroupBackoffSeconds": float64(1), "nested": map[string]any{"a": float64(1), "b": float64(2)}},
		{"permitWaitingTimeSeconds": float64(5), "nested": map[string]any{"b": float64(2)}},
	}
	for i, p := range got.Profiles {
		var args map[string]any
		for _, pc := range p.PluginConfig {
			if pc.Name == "CalderaGang" {
				args = pc.Args
			}
		}
		if !reflect.DeepEqual(args, wantArgs[i]) {
			t.Errorf("profile %d CalderaGang args = %v, want %v", i, args, wantArgs[i])
		}
	}
}

// TestFeatureGates checks WithFeatureGates' parsing and the in-process
// check against this process's gates, without starting anything.
func TestFeatureGates(t *testing.T) {
	got, err := parseFeatureGates("GenericWorkload=true, NominatedNodeNameForExpectation=false")
	want := map[featuregate.Feature]bool{"GenericWorkload": true, "NominatedNodeNameForExpectation": false}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseFeatureGates = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "GenericWorkload", "GenericWorkload=yes", "=true"} {
		if _, err := parseFeatureGates(bad); err == nil {
			t.Errorf("parseFeatureGates(%q): want an error", bad)
		}
	}
	// As this process has them (no apiserver flag changed them): holds.
	on := utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload)
	if err := checkProcessGates(fmt.Sprintf("GenericWorkload=%v", on)); err != nil {
		t.Errorf("checkProcessGates with the process's own value: %v", err)
	}
	if err := checkProcessGates(fmt.Sprintf("GenericWorkload=%v", !on)); err == nil {
		t.Errorf("checkProcessGates with the opposite value: want an error")
	}
	if err := checkProcessGates("NoSuchGate=true"); err == nil {
		t.Errorf("checkProcessGates of an unknown gate: want an error")
	}
}
