package localcluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	configv1 "k8s.io/kube-scheduler/config/v1"
)

// shippedConfig is the repository's KubeSchedulerConfiguration.
func shippedConfig(t *testing.T) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "manifests", "scheduler", "config.yaml")
}

// TestRewriteSchedulerConfig rewrites the shipped configuration with every
// kind of change and reads the result back typed.
func TestRewriteSchedulerConfig(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "config.yaml")
	err := RewriteSchedulerConfig(shippedConfig(t), dst, SchedulerConfigChanges{
		Kubeconfig:        "/test/kubeconfig",
		QPS:               500,
		Burst:             1000,
		KeepConfiguredQPS: true,
		LeaderElection:    &LeaderElection{ResourceName: "lease-a", ResourceNamespace: "kube-system", DefaultRetryPeriod: 500 * time.Millisecond},
		PluginArgs: []PluginArgs{
			{Plugin: "CalderaGang", Args: map[string]any{"permitWaitingTimeSeconds": 5, "nested": map[string]any{"b": 2}}},
			{Plugin: "CalderaGang", Args: map[string]any{"nested": map[string]any{"c": 3}}},
			{Plugin: "NewPlugin", Args: map[string]any{"x": true}},
		},
		Edits: []func(*configv1.KubeSchedulerConfiguration) error{
			func(cfg *configv1.KubeSchedulerConfiguration) error {
				RemovePlugin(cfg, "CalderaGangPlacement")
				return nil
			},
			func(cfg *configv1.KubeSchedulerConfiguration) error {
				return EditAsMap(cfg, func(m map[string]any) error {
					m["podInitialBackoffSeconds"] = 2
					return nil
				})
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadSchedulerConfig(dst)
	if err != nil {
		t.Fatalf("reading the rewritten config back: %v", err)
	}

	if c := got.ClientConnection; c.Kubeconfig != "/test/kubeconfig" || c.QPS != 500 || c.Burst != 1000 {
		t.Errorf("clientConnection = %+v", c)
	}
	le := got.LeaderElection
	if le.LeaderElect == nil || !*le.LeaderElect || le.ResourceName != "lease-a" || le.ResourceNamespace != "kube-system" || le.ResourceLock != "leases" {
		t.Errorf("leaderElection = %+v", le)
	}
	// The shipped config sets its own retry period; the default must not replace it.
	if le.RetryPeriod.Duration != time.Second {
		t.Errorf("retryPeriod = %v, want the shipped 1s", le.RetryPeriod.Duration)
	}
	if got.PodInitialBackoffSeconds == nil || *got.PodInitialBackoffSeconds != 2 {
		t.Errorf("podInitialBackoffSeconds = %v, want 2", got.PodInitialBackoffSeconds)
	}
	if len(got.Profiles) != 2 {
		t.Fatalf("%d profiles, want the shipped 2", len(got.Profiles))
	}
	for _, p := range got.Profiles {
		args := map[string]map[string]any{}
		for _, pc := range p.PluginConfig {
			m := map[string]any{}
			if err := json.Unmarshal(pc.Args.Raw, &m); err != nil {
				t.Fatalf("%s args: %v", pc.Name, err)
			}
			args[pc.Name] = m
		}
		gang := args["CalderaGang"]
		if gang["permitWaitingTimeSeconds"] != 5.0 || gang["podGroupBackoffSeconds"] != 1.0 {
			t.Errorf("%s: CalderaGang args = %v: want the merge of the shipped and the given", *p.SchedulerName, gang)
		}
		if nested, _ := gang["nested"].(map[string]any); nested["b"] != 2.0 || nested["c"] != 3.0 {
			t.Errorf("%s: nested args = %v, want both merges", *p.SchedulerName, gang["nested"])
		}
		if args["NewPlugin"]["x"] != true {
			t.Errorf("%s: NewPlugin args = %v", *p.SchedulerName, args["NewPlugin"])
		}
		if _, ok := args["CalderaGangPlacement"]; ok {
			t.Errorf("%s: CalderaGangPlacement's pluginConfig survived RemovePlugin", *p.SchedulerName)
		}
		for _, pl := range append(p.Plugins.PreScore.Enabled, p.Plugins.Score.Enabled...) {
			if pl.Name == "CalderaGangPlacement" {
				t.Errorf("%s: CalderaGangPlacement still enabled", *p.SchedulerName)
			}
		}
	}

	// Off, and QPS replaced rather than kept.
	if err := RewriteSchedulerConfig(dst, dst, SchedulerConfigChanges{QPS: 5000, Burst: 5000}); err != nil {
		t.Fatal(err)
	}
	if got, err = ReadSchedulerConfig(dst); err != nil {
		t.Fatal(err)
	}
	if le := got.LeaderElection; le.LeaderElect == nil || *le.LeaderElect {
		t.Errorf("leaderElection = %+v, want off", le)
	}
	if c := got.ClientConnection; c.QPS != 5000 || c.Burst != 5000 || c.Kubeconfig != "/test/kubeconfig" {
		t.Errorf("clientConnection = %+v", c)
	}
}

// TestSchedulerConfigStrict checks that a field kube-scheduler does not know
// fails the rewrite, in the source as in a map edit, rather than vanish.
func TestSchedulerConfigStrict(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "bad.yaml")
	data := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofile: []\n"
	if err := os.WriteFile(src, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSchedulerConfig(src); err == nil || !strings.Contains(err.Error(), `unknown field "profile"`) {
		t.Errorf("reading a config with an unknown field: %v", err)
	}
	err := RewriteSchedulerConfig(shippedConfig(t), filepath.Join(dir, "out.yaml"), SchedulerConfigChanges{
		Edits: []func(*configv1.KubeSchedulerConfiguration) error{func(cfg *configv1.KubeSchedulerConfiguration) error {
			return EditAsMap(cfg, func(m map[string]any) error { m["profile"] = []any{}; return nil })
		}},
	})
	if err == nil || !strings.Contains(err.Error(), `unknown field "profile"`) {
		t.Errorf("an edit adding an unknown field: %v", err)
	}
}
