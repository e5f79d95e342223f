package badinput_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// startupCases are configurations the scheduler must refuse to start with,
// naming what is wrong, rather than run with a guess.
func (b *bad) startupCases(t *testing.T) {
	env := b.env
	for _, tc := range []struct {
		name string
		opts func(t *testing.T) []harness.SchedulerOption
		// want are substrings of the startup error.
		want []string
	}{{
		name: "CalderaGang arg out of range",
		opts: args("CalderaGang", map[string]any{"permitWaitingTimeSeconds": -1}),
		want: []string{`"CalderaGang"`, "CalderaGang args: permitWaitingTimeSeconds: Invalid value: -1: must be greater than 0"},
	}, {
		name: "CalderaGang backoff cap below the backoff",
		opts: args("CalderaGang", map[string]any{"podGroupBackoffSeconds": 10, "podGroupMaxBackoffSeconds": 5}),
		want: []string{"CalderaGang args: podGroupMaxBackoffSeconds: Invalid value: 5: must be at least podGroupBackoffSeconds"},
	}, {
		name: "CalderaGang arg misspelt",
		opts: args("CalderaGang", map[string]any{"permitWaitTimeSeconds": 30}),
		want: []string{"CalderaGang args", `unknown field "permitWaitTimeSeconds"`},
	}, {
		name: "CalderaGang arg of the wrong type",
		opts: args("CalderaGang", map[string]any{"statusSyncPeriodSeconds": "often"}),
		want: []string{"CalderaGang args", "statusSyncPeriodSeconds"},
	}, {
		name: "CalderaEnqueue arg out of range",
		opts: args("CalderaEnqueue", map[string]any{"overcommitFactor": 0.9}),
		want: []string{"CalderaEnqueue args: overcommitFactor: Invalid value: 0.9: must be at least 1.0"},
	}, {
		name: "CalderaEnqueue arg misspelt",
		opts: args("CalderaEnqueue", map[string]any{"defaultQeue": "x"}),
		want: []string{"CalderaEnqueue args", `unknown field "defaultQeue"`},
	}, {
		name: "plugin that does not exist",
		opts: edit(func(cfg map[string]any) {
			prof := cfg["profiles"].([]any)[0].(map[string]any)
			permit := prof["plugins"].(map[string]any)["permit"].(map[string]any)
			permit["enabled"] = append(permit["enabled"].([]any), map[string]any{"name": "CalderaGnag"})
		}),
		want: []string{`"CalderaGnag"`, "does not exist"},
	}, {
		name: "unknown configuration field",
		opts: edit(func(cfg map[string]any) { cfg["profile"] = []any{} }),
		want: []string{`unknown field "profile"`},
	}, {
		name: "malformed YAML",
		opts: func(t *testing.T) []harness.SchedulerOption {
			path := filepath.Join(t.TempDir(), "config.yaml")
			data := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n  - schedulerName: [caldera\n"
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			return []harness.SchedulerOption{harness.WithRawConfigFile(path)}
		},
		want: []string{"yaml", "line 4"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := env.TryStartScheduler(t, tc.opts(t)...)
			if err == nil {
				s.Stop()
				t.Fatalf("the scheduler started; want a startup error containing %q", tc.want)
			}
			t.Logf("startup error: %v", err)
			wantNote(t, "startup error", err.Error(), tc.want...)
		})
	}

	t.Run("a valid configuration still starts and schedules", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.StartScheduler(t)
		env.CreatePodGroup(t, harness.PodGroup(ns, "after", 2))
		env.CreatePods(t, harness.Members(ns, "after", 2, "1")...)
		env.WaitBound(t, ns, timeout, "after-0", "after-1")
	})
}

// args returns scheduler options that merge a in the plugin's args.
func args(plugin string, a map[string]any) func(*testing.T) []harness.SchedulerOption {
	return func(*testing.T) []harness.SchedulerOption {
		return []harness.SchedulerOption{harness.WithPluginArgs(plugin, a)}
	}
}

// edit returns scheduler options that change the decoded configuration.
func edit(f func(cfg map[string]any)) func(*testing.T) []harness.SchedulerOption {
	return func(*testing.T) []harness.SchedulerOption {
		return []harness.SchedulerOption{harness.WithConfigEdit(func(cfg map[string]any) error {
			f(cfg)
			return nil
		})}
	}
}
