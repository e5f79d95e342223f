package kubectlcaldera

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
)

// readJob turns a job file into what the API server would hold: a Job's
// first pods owned by it, objects that schedule nothing left out, kinds
// whose pods it cannot predict refused.
func TestReadJob(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, file string
		pods       []string
		ignored    string
		err        string
	}{{
		name: "indexed job with a service",
		file: `apiVersion: v1
kind: Service
metadata: {name: svc}
---
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  parallelism: 3
  completions: 2
  completionMode: Indexed
  template:
    metadata:
      annotations: {scheduling.caldera.dev/gang-min-member: "2"}
    spec:
      schedulerName: caldera-scheduler
      containers: [{name: c, image: x}]
`,
		pods:    []string{"train-0", "train-1"},
		ignored: "Service/svc",
	}, {
		name: "bare pod and an operator's resource",
		file: `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: other}
spec: {containers: [{name: c, image: x}]}
---
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: r}
`,
		pods:    []string{"p"},
		ignored: "RayCluster/r",
	}, {
		name: "deployment refused",
		file: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {a: b}}
  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: x}]}}
`,
		err: "holds a Deployment",
	}, {
		name: "nothing to schedule",
		file: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		err:  "no Pod or Job",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			job, err := readJob(strings.NewReader(tc.file), "ns", now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range job.pods {
				names = append(names, p.Name)
				if p.UID == "" || !p.CreationTimestamp.Time.Equal(now) || p.Spec.SchedulerName == "" || p.Status.Phase != "Pending" {
					t.Errorf("pod %s not as the API server would hold it: %+v", p.Name, p.ObjectMeta)
				}
				if o := p.OwnerReferences; len(o) > 0 && (o[0].Kind != "Job" || p.Labels[batchv1.JobNameLabel] != o[0].Name) {
					t.Errorf("pod %s: owner %+v, labels %v", p.Name, o, p.Labels)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.pods, ",") {
				t.Errorf("pods %v, want %v", names, tc.pods)
			}
			if strings.Join(job.ignored, ",") != tc.ignored {
				t.Errorf("ignored %v, want %s", job.ignored, tc.ignored)
			}
		})
	}
}

// what-if reads the scheduler's configuration as the scheduler does:
// profiles that disagree on CalderaReclaim's eviction kinds are refused
// (one admission pass counts eviction room for every profile), while a
// different minVictimRuntimeSeconds is each profile's own.
func TestLoadSettingsReclaim(t *testing.T) {
	profile := func(name, reclaimArgs string) string {
		return `- schedulerName: ` + name + `
  plugins:
    multiPoint:
      enabled: [{name: CalderaEnqueue}, {name: CalderaReclaim}]
  pluginConfig:
  - name: CalderaReclaim
    args: {` + reclaimArgs + `}
`
	}
	const head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
	for _, tc := range []struct {
		name, cfg, err string
		minRuntime     time.Duration
	}{
		{name: "same kinds", cfg: profile("a", "enableReclaim: true, minVictimRuntimeSeconds: 10") + profile("b", "enableReclaim: true, minVictimRuntimeSeconds: 30"),
			minRuntime: 30 * time.Second},
		{name: "kinds differ", cfg: profile("a", "enableReclaim: true") + profile("b", "enableReclaim: false"),
			err: "profile b: CalderaReclaim's enableReclaim and enablePreemption differ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(file, []byte(head+tc.cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := loadSettings(file)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("loadSettings: %v, want an error containing %q", err, tc.err)
				}
			case err != nil:
				t.Fatalf("loadSettings: %v", err)
			case !s.reclaim || s.minRuntime != tc.minRuntime || len(s.profiles) != 2:
				t.Errorf("settings %+v, want reclaim on, minRuntime %v, two profiles", s, tc.minRuntime)
			}
		})
	}
}
